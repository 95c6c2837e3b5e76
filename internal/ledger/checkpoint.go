package ledger

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// Checkpoints are C2SP signed-note checkpoints
// (docs/design/ledger.md#merkle-log): the body is three lines — origin
// "ironvise/<instance id>", the decimal tree size, the base64 root hash —
// followed by a blank line and one Ed25519 note signature line by the issuer
// key, whose note key name is the origin. Anything that speaks that format
// verifies them with the verifier key of [Ledger.CheckpointVerifierKey].

// OriginPrefix starts every checkpoint origin line.
const OriginPrefix = "ironvise/"

// CheckpointBody formats the signed body of a checkpoint.
func CheckpointBody(origin string, size int64, root Hash) string {
	return origin + "\n" + strconv.FormatInt(size, 10) + "\n" + base64.StdEncoding.EncodeToString(root[:]) + "\n"
}

// ParseCheckpointBody parses a checkpoint body. Extension lines after the
// root are refused: this build writes none, so one would be a forgery or a
// different format.
func ParseCheckpointBody(text string) (origin string, size int64, root Hash, err error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return "", 0, root, errors.New("ledger: checkpoint body: want exactly origin, size and root lines")
	}
	origin = strings.TrimSuffix(lines[0], "\n")
	if origin == "" || strings.ContainsAny(origin, " \t\r") {
		return "", 0, root, errors.New("ledger: checkpoint body: bad origin line")
	}
	sizeText := strings.TrimSuffix(lines[1], "\n")
	size, err = strconv.ParseInt(sizeText, 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != sizeText {
		return "", 0, root, fmt.Errorf("ledger: checkpoint body: bad tree size %q", sizeText)
	}
	rootText := strings.TrimSuffix(lines[2], "\n")
	b, err := base64.StdEncoding.Strict().DecodeString(rootText)
	if err != nil || len(b) != len(root) {
		return "", 0, root, fmt.Errorf("ledger: checkpoint body: bad root hash %q", rootText)
	}
	copy(root[:], b)
	return origin, size, root, nil
}

// noteSigner signs notes with a SigningKey (x/mod/sumdb/note builds
// signers only from encoded key strings, which would put the seed in a Go
// string).
type noteSigner struct {
	name string
	hash uint32
	key  *SigningKey
}

func newNoteSigner(name string, key *SigningKey) (*noteSigner, error) {
	v, err := noteVerifier(name, key.Public())
	if err != nil {
		return nil, err
	}
	return &noteSigner{name: name, hash: v.KeyHash(), key: key}, nil
}

// Name implements note.Signer.
func (s *noteSigner) Name() string { return s.name }

// KeyHash implements note.Signer.
func (s *noteSigner) KeyHash() uint32 { return s.hash }

// Sign implements note.Signer.
func (s *noteSigner) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.key.priv, msg), nil }

// CheckpointVerifierKey returns the note verifier key ("name+hash+key") of
// an issuer public key for origin, the form note-aware tools accept.
func CheckpointVerifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return "", fmt.Errorf("ledger: checkpoint verifier key: %w", err)
	}
	return vkey, nil
}

func noteVerifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := CheckpointVerifierKey(origin, pub)
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("ledger: checkpoint verifier: %w", err)
	}
	return v, nil
}

// signCheckpoint signs the checkpoint of (size, root) and returns it
// without its time and event index, which the caller fills.
func signCheckpoint(origin string, size int64, root Hash, key *SigningKey) (Checkpoint, error) {
	s, err := newNoteSigner(origin, key)
	if err != nil {
		return Checkpoint{}, err
	}
	msg, err := note.Sign(&note.Note{Text: CheckpointBody(origin, size, root)}, s)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ledger: sign checkpoint: %w", err)
	}
	cp := Checkpoint{TreeSize: size, Root: root, KeyID: fmt.Sprintf("%08x", s.hash), PublicKey: key.Public(), Note: msg}
	cp.Signature, err = noteSignature(msg)
	if err != nil {
		return Checkpoint{}, bug(err)
	}
	return cp, nil
}

// noteSignature extracts the 64-byte Ed25519 signature from a one-signature
// note (its base64 holds a 4-byte key hash, then the signature).
func noteSignature(msg []byte) ([]byte, error) {
	i := bytes.LastIndex(msg, []byte("\n\n"))
	if i < 0 {
		return nil, errors.New("ledger: checkpoint note: no signature block")
	}
	line := strings.TrimSuffix(string(msg[i+2:]), "\n")
	if strings.Contains(line, "\n") {
		return nil, errors.New("ledger: checkpoint note: more than one signature")
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "—" {
		return nil, errors.New("ledger: checkpoint note: bad signature line")
	}
	b, err := base64.StdEncoding.DecodeString(f[2])
	if err != nil || len(b) != 4+ed25519.SignatureSize {
		return nil, errors.New("ledger: checkpoint note: bad signature encoding")
	}
	return b[4:], nil
}

// VerifyCheckpoint checks a checkpoint's note: signed by pub under origin,
// and its body agreeing with TreeSize and Root. It needs no database.
func VerifyCheckpoint(cp *Checkpoint, origin string, pub ed25519.PublicKey) error {
	v, err := noteVerifier(origin, pub)
	if err != nil {
		return err
	}
	n, err := note.Open(cp.Note, note.VerifierList(v))
	if err != nil {
		return fmt.Errorf("ledger: checkpoint %d: signature: %w", cp.TreeSize, err)
	}
	o, size, root, err := ParseCheckpointBody(n.Text)
	if err != nil {
		return fmt.Errorf("ledger: checkpoint %d: %w", cp.TreeSize, err)
	}
	if o != origin || size != cp.TreeSize || root != cp.Root {
		return fmt.Errorf("ledger: checkpoint %d: signed body (origin %q, size %d, root %s) disagrees with the stored row", cp.TreeSize, o, size, root)
	}
	sig, err := noteSignature(cp.Note)
	if err != nil || !bytes.Equal(sig, cp.Signature) {
		return fmt.Errorf("ledger: checkpoint %d: stored signature differs from the note's", cp.TreeSize)
	}
	return nil
}
