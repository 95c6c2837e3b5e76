package evidence

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/ironvise/ironvise/internal/ledger"
)

// CertificateFormatVersion names the certificate layout this build
// writes. A verifier refuses any value but this one and
// CertificateFormatV1: a new layout gets a new version.
const CertificateFormatVersion = "ironvise-elc/v2"

// CertificateFormatV1 is the layout before events carried their origin
// label (CertEvent.Origin). Verifiers still read it, so certificates
// issued before stay verifiable.
const CertificateFormatV1 = "ironvise-elc/v1"

// certSigDomain separates certificate signatures from every other use of
// the issuer key (event signatures, checkpoint notes, credentials).
const certSigDomain = "ironvise/elc/v1"

// Certificate is the signed body of an .elc document (see the package
// doc). Field names are part of the format.
type Certificate struct {
	Format   string      `json:"format"`
	IssuedAt string      `json:"issued_at"`
	Issuer   CertIssuer  `json:"issuer"`
	Session  CertSession `json:"session"`
	// PolicyHash repeats the session's policy hash at top level, where an
	// auditor looks for it first.
	PolicyHash *string `json:"policy_hash"`
	// Keys are the session's key rows: the genesis key (valid from 0) and
	// one per rotation.
	Keys []CertKey `json:"keys"`
	// Events are the session's events in sequence order, each exactly as
	// stored.
	Events []CertEvent `json:"events"`
	// Checkpoint is the signed tree head that covers every event;
	// InclusionProof proves all of them in it at once.
	Checkpoint     CertCheckpoint  `json:"checkpoint"`
	SealCheckpoint *CertCheckpoint `json:"seal_checkpoint"`
	InclusionProof CertInclusion   `json:"inclusion_proof"`
	Findings       []Finding       `json:"findings"`
	// Consistency, present when the certificate was exported for an
	// auditor's checkpoint (report --checkpoint), proves that the log of
	// Checkpoint and the log of that earlier (or later) checkpoint are one
	// history: the smaller is a prefix of the larger.
	Consistency *CertConsistency `json:"consistency,omitempty"`
}

// CertConsistency is an RFC 6962 consistency proof between the
// certificate's checkpoint and another checkpoint of the same log.
type CertConsistency struct {
	// TreeSize and RootHash are the other checkpoint's.
	TreeSize int64       `json:"tree_size"`
	RootHash ledger.Hash `json:"root_hash"`
	// Hashes prove the smaller tree a prefix of the larger.
	Hashes []ledger.Hash `json:"hashes"`
}

// CertIssuer identifies the issuer key that signed the certificate and
// the checkpoints.
type CertIssuer struct {
	KeyID     string   `json:"key_id"`
	PublicKey HexBytes `json:"public_key"`
	DID       string   `json:"did"`
	Origin    string   `json:"origin"`
}

// CertSession is the session header.
type CertSession struct {
	ID               string   `json:"id"`
	Goal             string   `json:"goal"`
	GoalHash         string   `json:"goal_hash"`
	PolicyHash       *string  `json:"policy_hash"`
	Status           string   `json:"status"`
	CreatedAt        string   `json:"created_at"`
	FinishedAt       *string  `json:"finished_at"`
	SealedAt         *string  `json:"sealed_at"`
	LLMBackend       string   `json:"llm_backend"`
	LLMModel         string   `json:"llm_model"`
	SandboxTier      string   `json:"sandbox_tier"`
	AgentLoop        bool     `json:"agent_loop"`
	SessionPublicKey HexBytes `json:"session_public_key"`
	SessionDID       string   `json:"session_did"`
	// EventCount is the number of events in the certificate.
	EventCount int `json:"event_count"`
}

// CertKey is one key row (docs/design/ledger.md#signing-keys).
type CertKey struct {
	ValidFromSeq uint64   `json:"valid_from_seq"`
	KeyID        string   `json:"key_id"`
	PublicKey    HexBytes `json:"public_key"`
}

// CertEvent is one event exactly as stored. Payload holds the stored
// canonical JSON bytes as a JSON string, so they survive re-indentation of
// the certificate byte for byte.
type CertEvent struct {
	Seq             uint64      `json:"seq"`
	LogIndex        int64       `json:"log_index"`
	Type            string      `json:"type"`
	CreatedAtMicros int64       `json:"created_at_micros"`
	PrevHash        ledger.Hash `json:"prev_hash"`
	Hash            ledger.Hash `json:"hash"`
	Signer          string      `json:"signer"`
	KeyID           string      `json:"key_id"`
	Signature       HexBytes    `json:"signature"`
	Payload         string      `json:"payload"`
	// Origin labels the event for the reader (v2): "ironvise", "client"
	// (appended through the API, never evidence) or "legacy" (written
	// before origins were recorded). It repeats the payload's signed
	// "event_origin"; verification refuses a label that disagrees.
	Origin string `json:"origin,omitempty"`
}

// CertCheckpoint is a signed tree head (docs/design/ledger.md#merkle-log);
// Note is the complete C2SP signed note.
type CertCheckpoint struct {
	TreeSize  int64       `json:"tree_size"`
	RootHash  ledger.Hash `json:"root_hash"`
	Timestamp string      `json:"timestamp"`
	KeyID     string      `json:"key_id"`
	PublicKey HexBytes    `json:"public_key"`
	Signature HexBytes    `json:"signature"`
	Note      string      `json:"note"`
}

// CertSignature is the issuer's signature over the certificate body.
type CertSignature struct {
	Alg   string   `json:"alg"`
	KeyID string   `json:"key_id"`
	Value HexBytes `json:"value"`
}

// HexBytes is a byte string in lowercase hex on the wire.
type HexBytes []byte

// MarshalText implements encoding.TextMarshaler.
func (b HexBytes) MarshalText() ([]byte, error) {
	out := make([]byte, hex.EncodedLen(len(b)))
	hex.Encode(out, b)
	return out, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *HexBytes) UnmarshalText(t []byte) error {
	out := make([]byte, hex.DecodedLen(len(t)))
	if _, err := hex.Decode(out, t); err != nil {
		return fmt.Errorf("evidence: hex: %w", err)
	}
	*b = out
	return nil
}

// BuildCertificate exports session id as a signed .elc document. A sealed
// session is covered by the checkpoint its seal names; for a running
// session a checkpoint is written first if needed, and the certificate
// holds the events that checkpoint covers. An unknown session is
// ledger.ErrNotFound. The session is verified first (verify-session's
// checks); when one fails nothing is signed and the error is an
// *UnverifiedError naming it.
func BuildCertificate(ctx context.Context, l *ledger.Ledger, id uuid.UUID) ([]byte, error) {
	return BuildCertificateFor(ctx, l, id, nil)
}

// BuildCertificateFor is BuildCertificate for an auditor who keeps a
// checkpoint of this ledger (the signed note `ironvise checkpoint latest`
// writes): the certificate also carries a consistency proof between that
// checkpoint and its own, which `verify-cert --checkpoint` checks. A note
// this ledger's issuer did not sign, or whose root the ledger does not
// have at that size (a fork), is refused. auditorNote nil is
// BuildCertificate.
func BuildCertificateFor(ctx context.Context, l *ledger.Ledger, id uuid.UUID, auditorNote []byte) ([]byte, error) {
	data, _, err := buildCertificateFor(ctx, l, id, auditorNote)
	return data, err
}

func buildCertificateFor(ctx context.Context, l *ledger.Ledger, id uuid.UUID, auditorNote []byte) ([]byte, []Finding, error) {
	if err := verifyForExport(ctx, l, id); err != nil {
		return nil, nil, err
	}
	c, err := certificateBody(ctx, l, id, time.Now())
	if err != nil {
		return nil, nil, err
	}
	if auditorNote != nil {
		if c.Consistency, err = consistencyFor(ctx, l, c.Checkpoint, auditorNote); err != nil {
			return nil, nil, err
		}
	}
	data, err := signCertificate(c, l.Issuer())
	if err != nil {
		return nil, nil, err
	}
	return data, c.Findings, nil
}

// consistencyFor proves the certificate's checkpoint cp and the auditor's
// checkpoint one history.
func consistencyFor(ctx context.Context, l *ledger.Ledger, cp CertCheckpoint, auditorNote []byte) (*CertConsistency, error) {
	theirs, err := ledger.ParseCheckpointNote(auditorNote, l.Origin(), l.IssuerPublicKey())
	if err != nil {
		return nil, fmt.Errorf("evidence: --checkpoint: %w", err)
	}
	lo, hi := theirs.TreeSize, cp.TreeSize
	if lo > hi {
		lo, hi = hi, lo
	}
	p, err := l.ConsistencyProof(ctx, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("evidence: --checkpoint of size %d: %w", theirs.TreeSize, err)
	}
	root := p.OldRoot
	if theirs.TreeSize == hi {
		root = p.NewRoot
	}
	if root != theirs.Root {
		return nil, fmt.Errorf("evidence: --checkpoint: this ledger's log at size %d has root %s, the checkpoint says %s: it is not a checkpoint of this history (a fork or another ledger)", theirs.TreeSize, root, theirs.Root)
	}
	return &CertConsistency{TreeSize: theirs.TreeSize, RootHash: theirs.Root, Hashes: p.Path}, nil
}

func buildCertificate(ctx context.Context, l *ledger.Ledger, id uuid.UUID, now time.Time) ([]byte, []Finding, error) {
	c, err := certificateBody(ctx, l, id, now)
	if err != nil {
		return nil, nil, err
	}
	data, err := signCertificate(c, l.Issuer())
	if err != nil {
		return nil, nil, err
	}
	return data, c.Findings, nil
}

// certificateBody reads everything the certificate holds in one read
// transaction, so it is one consistent snapshot of the ledger.
func certificateBody(ctx context.Context, l *ledger.Ledger, id uuid.UUID, now time.Time) (*Certificate, error) {
	s, err := exportedSession(ctx, l, id, "certificate")
	if err != nil {
		return nil, err
	}
	if !s.Sealed() {
		// The certificate proves inclusion in a signed tree head: make
		// sure one covers what the session holds now.
		if _, err := l.Checkpoint(ctx); err != nil {
			return nil, fmt.Errorf("evidence: certificate of %s: %w", id, err)
		}
	}
	pub := l.IssuerPublicKey()
	c := &Certificate{
		Format: CertificateFormatVersion, IssuedAt: formatTime(now),
		Issuer: CertIssuer{KeyID: ledger.KeyID(pub), PublicKey: HexBytes(pub), DID: ledger.DIDKey(pub), Origin: l.Origin()},
	}
	err = l.Backend().View(ctx, func(tx ledger.ReadTx) error {
		s, err := tx.Session(ctx, id)
		if err != nil {
			return err
		}
		evs, err := tx.Events(ctx, id, 0, 0)
		if err != nil {
			return err
		}
		keys, err := tx.Keys(ctx, id)
		if err != nil {
			return err
		}
		cp, sealCP, err := certificateCheckpoints(ctx, tx, evs)
		if err != nil {
			return err
		}
		// Events after the checkpoint (a running session's newest) cannot
		// be proven yet and are left out.
		n := 0
		for n < len(evs) && evs[n].LogIndex < cp.TreeSize {
			n++
		}
		evs = evs[:n]
		c.Session = certSession(&s, n)
		c.PolicyHash = c.Session.PolicyHash
		c.Checkpoint = certCheckpoint(cp)
		if sealCP != nil {
			sc := certCheckpoint(*sealCP)
			c.SealCheckpoint = &sc
		}
		c.Keys = make([]CertKey, 0, len(keys))
		for _, k := range keys {
			// A key declared by a rotation beyond the included events
			// is not part of this record.
			if k.ValidFromSeq <= uint64(n) {
				c.Keys = append(c.Keys, CertKey{ValidFromSeq: k.ValidFromSeq, KeyID: k.KeyID, PublicKey: HexBytes(k.PublicKey)})
			}
		}
		c.Events = make([]CertEvent, n)
		for i := range evs {
			c.Events[i] = certEvent(&evs[i])
		}
		c.InclusionProof, err = proveMulti(cp.TreeSize, evs, &txHashes{ctx: ctx, tx: tx})
		if err != nil {
			return fmt.Errorf("prove %d events in tree %d: %w", len(evs), cp.TreeSize, err)
		}
		c.Findings, _ = extractFindings(evs)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("evidence: certificate of %s: %w", id, err)
	}
	return c, nil
}

// certificateCheckpoints picks the checkpoint a certificate proves
// against: the one a seal names (it covers the whole chain and never
// changes, so a sealed session's certificate is reproducible), else the
// newest.
func certificateCheckpoints(ctx context.Context, tx ledger.ReadTx, evs []ledger.Event) (cp ledger.Checkpoint, seal *ledger.Checkpoint, err error) {
	if n := len(evs); n > 0 && evs[n-1].Type == ledger.TypeSessionSealed {
		var p struct {
			Size int64 `json:"checkpoint_tree_size"`
		}
		if json.Unmarshal(evs[n-1].Payload, &p) == nil {
			sc, err := tx.CheckpointBySize(ctx, p.Size)
			if err == nil {
				return sc, &sc, nil
			}
			if !IsNotFound(err) {
				return cp, nil, err
			}
		}
	}
	cp, err = tx.LatestCheckpoint(ctx)
	return cp, nil, err
}

func certSession(s *ledger.Session, events int) CertSession {
	return CertSession{
		ID: s.ID.String(), Goal: s.Goal, GoalHash: s.GoalHash, PolicyHash: nonEmpty(s.PolicyHash), Status: string(s.Status),
		CreatedAt: formatTime(s.CreatedAt), FinishedAt: optTime(s.FinishedAt), SealedAt: optTime(s.SealedAt),
		LLMBackend: s.LLMBackend, LLMModel: s.LLMModel, SandboxTier: s.SandboxTier, AgentLoop: s.AgentLoop,
		SessionPublicKey: HexBytes(s.PublicKey), SessionDID: s.DID, EventCount: events,
	}
}

func certEvent(ev *ledger.Event) CertEvent {
	return CertEvent{
		Seq: ev.Seq, LogIndex: ev.LogIndex, Type: ev.Type, CreatedAtMicros: ev.CreatedMicros, PrevHash: ev.PrevHash,
		Hash: ev.Hash, Signer: ev.Signer, KeyID: ev.KeyID, Signature: HexBytes(ev.Signature), Payload: string(ev.Payload),
		Origin: ledger.EventOrigin(ev.Payload),
	}
}

func certCheckpoint(cp ledger.Checkpoint) CertCheckpoint {
	return CertCheckpoint{
		TreeSize: cp.TreeSize, RootHash: cp.Root, Timestamp: formatTime(cp.CreatedAt()), KeyID: cp.KeyID,
		PublicKey: HexBytes(cp.PublicKey), Signature: HexBytes(cp.Signature), Note: string(cp.Note),
	}
}

// txHashes reads stored Merkle hashes through a read transaction for
// tlog.
type txHashes struct {
	ctx context.Context
	tx  ledger.ReadTx
}

// ReadHashes implements tlog.HashReader.
func (r *txHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	if len(indexes) == 0 {
		return nil, nil
	}
	hs, err := r.tx.ReadHashes(r.ctx, indexes)
	if err != nil {
		return nil, fmt.Errorf("read log hashes: %w", err)
	}
	if len(hs) != len(indexes) {
		return nil, fmt.Errorf("read %d log hashes, got %d", len(indexes), len(hs))
	}
	out := make([]tlog.Hash, len(hs))
	for i, h := range hs {
		out[i] = tlog.Hash(h)
	}
	return out, nil
}

// certDigest is what the issuer signs: SHA-256(domain ‖ 0x00 ‖ JCS(body)).
func certDigest(canonicalBody []byte) ledger.Hash {
	h := sha256.New()
	h.Write([]byte(certSigDomain))
	h.Write([]byte{0})
	h.Write(canonicalBody)
	var out ledger.Hash
	h.Sum(out[:0])
	return out
}

// signCertificate encodes c canonically and signs it with the issuer key.
func signCertificate(c *Certificate, issuer *ledger.SigningKey) ([]byte, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("evidence: encode certificate: %w", err)
	}
	body, err := ledger.Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("evidence: encode certificate: %w", err)
	}
	pub := issuer.Public()
	sig := CertSignature{Alg: "Ed25519", KeyID: ledger.KeyID(pub), Value: issuer.Sign(certDigest(body))}
	return assembleDocument(body, &sig)
}

// assembleDocument writes {"certificate":BODY,"signature":SIG} with BODY
// as given (canonical), one document per file, newline-terminated.
func assembleDocument(body []byte, sig *CertSignature) ([]byte, error) {
	sj, err := json.Marshal(sig)
	if err != nil {
		return nil, fmt.Errorf("evidence: encode certificate signature: %w", err)
	}
	var b bytes.Buffer
	b.Grow(len(body) + len(sj) + 32)
	b.WriteString(`{"certificate":`)
	b.Write(body)
	b.WriteString(`,"signature":`)
	b.Write(sj)
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// issuerKeyOK reports whether the certificate's issuer block names pub
// consistently.
func issuerKeyOK(ci *CertIssuer, pub ed25519.PublicKey) bool {
	return ci.KeyID == ledger.KeyID(pub) && ci.DID == ledger.DIDKey(pub) && ci.Origin == ledger.OriginPrefix+ledger.KeyID(pub)
}
