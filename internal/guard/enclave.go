package guard

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/software"
	"github.com/ironvise/ironvise/internal/strictjson"
)

// The software enclave (Level 1, docs/enclaves.md) changes two things in
// the protocol. The host hands the worker its secrets on an inherited pipe,
// descriptor SecretsFD, instead of GUARD_HMAC_KEY, as one JSON object:
//
//	{"hmac_key":"<64 hex>","enclave":"software"}
//
// (the remote level, "enclave":"remote", adds "remote_channel", base64: the
// exported channel of internal/enclave/remote that the worker's model
// client uses; the worker is hardened as in Level 1 either way). And the worker's first line, before
// any request, is a hello sealed under HelloLabel that carries its
// enclave.Measurement; the host checks it, and the worker's /proc entries,
// before it sends a request.

// Software enclave constants.
const (
	// HelloLabel prefixes the MAC input of the worker's hello, so that a
	// hello can never pass for a response or a request, nor the reverse.
	HelloLabel = "ironvise-guard/1 hello\n"
	// SecretsFD is the worker's descriptor for the secrets pipe (the first
	// of exec.Cmd.ExtraFiles).
	SecretsFD = 3
	// SecretsFDEnv tells the worker that its secrets arrive on SecretsFD;
	// its value is the descriptor number.
	SecretsFDEnv = "GUARD_SECRETS_FD"
	// WorkerProfile is the name of the confinement profile the worker
	// applies (internal/sandbox/native HTTPSClient), as its measurement
	// must report it.
	WorkerProfile = "https-client"
	// maxSecretsBytes bounds the secrets document.
	maxSecretsBytes = 64 << 10
)

// WorkerSecrets is what a worker read from its secrets pipe. The caller
// must call Close.
type WorkerSecrets struct {
	// Key is the HMAC key, in locked memory outside the Go heap.
	Key *software.Secret
	// Enclave is the level the host asked for.
	Enclave enclave.Level
	// RemoteChannel is the opaque channel blob of a remote level; nil for
	// LevelSoftware.
	RemoteChannel []byte
}

// Close zeroes and releases the key and zeroes the channel blob.
func (s *WorkerSecrets) Close() error {
	clear(s.RemoteChannel)
	return s.Key.Close()
}

// wireSecrets is the secrets document. The secret members are raw bytes,
// not strings, so that they can be zeroed after use.
type wireSecrets struct {
	HMACKey       json.RawMessage `json:"hmac_key"`
	Enclave       enclave.Level   `json:"enclave"`
	RemoteChannel json.RawMessage `json:"remote_channel,omitempty"`
}

// ReadWorkerSecrets reads the secrets document from r (the secrets pipe,
// until its end) and zeroes every buffer it read it through. The key goes
// straight from the hex text into a software.Secret.
func ReadWorkerSecrets(r io.Reader) (*WorkerSecrets, error) {
	buf := make([]byte, maxSecretsBytes+1)
	defer clear(buf)
	n, err := io.ReadFull(r, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
	case err != nil:
		return nil, fmt.Errorf("guard worker: read secrets: %w", err)
	default:
		return nil, fmt.Errorf("guard worker: secrets exceed %d bytes", maxSecretsBytes)
	}
	var w wireSecrets
	defer clear(w.HMACKey)
	defer clear(w.RemoteChannel)
	if err := strictjson.Unmarshal(buf[:n], 2, &w); err != nil {
		// The decoder's message may quote the input; it is not repeated.
		return nil, fmt.Errorf("guard worker: secrets are not the expected JSON object: %w", ErrMalformed)
	}
	switch w.Enclave {
	case enclave.LevelSoftware, enclave.LevelRemote:
	default:
		return nil, fmt.Errorf("guard worker: secrets name enclave %q, not software or remote", w.Enclave)
	}
	if len(w.HMACKey) != 2*KeyBytes+2 || w.HMACKey[0] != '"' || w.HMACKey[len(w.HMACKey)-1] != '"' {
		return nil, fmt.Errorf("guard worker: hmac_key is not %d hex-encoded bytes", KeyBytes)
	}
	key, err := software.NewSecret(KeyBytes)
	if err != nil {
		return nil, fmt.Errorf("guard worker: %w", err)
	}
	if _, err := hex.Decode(key.Bytes(), w.HMACKey[1:len(w.HMACKey)-1]); err != nil {
		_ = key.Close()
		return nil, fmt.Errorf("guard worker: hmac_key is not %d hex-encoded bytes", KeyBytes)
	}
	s := &WorkerSecrets{Key: key, Enclave: w.Enclave}
	if w.RemoteChannel != nil {
		var b64 string
		if err := json.Unmarshal(w.RemoteChannel, &b64); err != nil {
			_ = key.Close()
			return nil, fmt.Errorf("guard worker: remote_channel is not a string: %w", ErrMalformed)
		}
		if s.RemoteChannel, err = base64.StdEncoding.DecodeString(b64); err != nil || len(s.RemoteChannel) == 0 {
			_ = key.Close()
			return nil, fmt.Errorf("guard worker: remote_channel is not non-empty base64: %w", ErrMalformed)
		}
	}
	if (w.Enclave == enclave.LevelRemote) != (s.RemoteChannel != nil) {
		_ = s.Close()
		return nil, fmt.Errorf("guard worker: enclave %q and remote_channel disagree: %w", w.Enclave, ErrMalformed)
	}
	return s, nil
}

// encodeSecrets builds the secrets document for a hardened worker: level
// is LevelSoftware, or LevelRemote with channel, the exported remote
// enclave channel. The caller zeroes it once written.
func encodeSecrets(key []byte, level enclave.Level, channel []byte) []byte {
	b := make([]byte, 0, 2*len(key)+48+base64.StdEncoding.EncodedLen(len(channel))+20)
	b = append(b, `{"hmac_key":"`...)
	b = hex.AppendEncode(b, key)
	b = append(b, `","enclave":"`...)
	b = append(b, level...)
	if level == enclave.LevelRemote {
		b = append(b, `","remote_channel":"`...)
		b = base64.StdEncoding.AppendEncode(b, channel)
	}
	return append(b, `"}`...)
}

// hello is the worker's first message in the software enclave.
type hello struct {
	Enclave     enclave.Level       `json:"enclave"`
	Measurement enclave.Measurement `json:"measurement"`
}

// sealHello builds the hello line.
func sealHello(key []byte, m enclave.Measurement) ([]byte, error) {
	m.HostChecked = []string{}
	payload, err := json.Marshal(hello{Enclave: enclave.LevelSoftware, Measurement: m})
	if err != nil {
		return nil, fmt.Errorf("guard worker: encode hello: %w", err)
	}
	return seal(key, HelloLabel, payload), nil
}

// openHello authenticates and decodes a hello line (without its '\n').
func openHello(key []byte, line []byte) (enclave.Measurement, error) {
	// The MAC check comes first; nothing of the hello is decoded before.
	// The key is new for this worker, so a hello recorded from another
	// worker does not verify.
	raw, err := open(key, HelloLabel, line)
	if err != nil {
		return enclave.Measurement{}, fmt.Errorf("hello: %w", err)
	}
	var h hello
	if err := strictjson.Unmarshal(raw, 4, &h); err != nil {
		return enclave.Measurement{}, fmt.Errorf("hello: %w: %w", ErrMalformed, err)
	}
	if h.Enclave != enclave.LevelSoftware {
		return enclave.Measurement{}, fmt.Errorf("hello: enclave %q, want %q: %w", h.Enclave, enclave.LevelSoftware, ErrMalformed)
	}
	return h.Measurement, nil
}

var hexSHA256 = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })

// checkMeasurement checks what the worker says of itself against what the
// host expects: the executable the host hashed, and every hardening and
// confinement property of Level 1. It returns the names of the checks
// that compared against something the host knows itself.
func checkMeasurement(m enclave.Measurement, wantSHA256 string) ([]string, error) {
	var bad []string
	// Security: a different binary (replaced on disk between the host's
	// hash and the exec, or a look-alike on the path) does not get the
	// session's prompts.
	if m.WorkerSHA256 != wantSHA256 {
		bad = append(bad, fmt.Sprintf("worker executable SHA-256 is %q, the host hashed %q", m.WorkerSHA256, wantSHA256))
	}
	// Security: each property is one protection the level promises; a
	// worker that lacks one must not be taken for a hardened one.
	if !m.MemoryLocked {
		bad = append(bad, "memory is not locked")
	}
	if m.Dumpable {
		bad = append(bad, "worker is dumpable")
	}
	if m.CoreLimit != 0 {
		bad = append(bad, fmt.Sprintf("RLIMIT_CORE is %d, want 0", m.CoreLimit))
	}
	if !m.SecretsOverPipe {
		bad = append(bad, "secrets did not arrive over the pipe")
	}
	if m.Profile != WorkerProfile {
		bad = append(bad, fmt.Sprintf("confinement profile %q, want %q", m.Profile, WorkerProfile))
	}
	if m.LandlockABI <= 0 {
		bad = append(bad, fmt.Sprintf("Landlock ABI %d: not confined", m.LandlockABI))
	}
	if !hexSHA256().MatchString(m.SeccompSHA256) {
		bad = append(bad, fmt.Sprintf("seccomp program hash %q is not a SHA-256", m.SeccompSHA256))
	}
	if !m.NoNewPrivs {
		bad = append(bad, "no_new_privs is not set")
	}
	// The worker does not get to claim what the host checked.
	if len(m.HostChecked) != 0 {
		bad = append(bad, "the worker filled in host_checked")
	}
	if bad != nil {
		return nil, errors.New("measurement refused: " + strings.Join(bad, "; "))
	}
	return []string{"executable hash"}, nil
}
