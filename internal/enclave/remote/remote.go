// Package remote is Level 3 of the guard's enclave (internal/enclave): the
// client side of an attested, encrypted channel to a remote AWS Nitro
// enclave that runs the guard model.
//
// The host process attests the enclave with [Attest], records the
// [enclave.Remote] it returns in the session's genesis, and hands the
// [Channel] to the guard worker ([Channel.Export], [ImportChannel]), whose
// model is then a [Client] (an llm.Client) talking through the channel.
// [VerifyRecord] re-verifies a recorded attestation offline.
//
// # Usage
//
//	ch, rec, err := remote.Attest(ctx, remote.Config{URL: url, PCRs: pinned})
//	blob, err := ch.Export() // to the guard worker over a pipe; ch is spent
//	// in the guard worker:
//	ch, err := remote.ImportChannel(blob)
//	var model llm.Client = remote.NewClient(ch, nil)
//
// # Protocol
//
// Version 1 of the protocol is JSON over HTTPS (plain HTTP only to a
// loopback IP address). Byte strings are base64 with the standard, padded
// alphabet, as encoding/json writes []byte. Every answer other than
// 200 OK is a failure.
//
// Attestation, POST {URL}/v1/attest:
//
//	request  {"nonce": N, "client_public_key": C}
//	response {"session": S, "attestation_document": D}
//
// N is 32 fresh random bytes, C the client's ephemeral X25519 public key
// (32 bytes), S an opaque session id of 1 to 128 printable ASCII bytes and D
// an AWS Nitro attestation document (COSE_Sign1) that must verify against
// the AWS Nitro Enclaves root (internal/enclave/nitro) and carry
//
//	nonce      = N
//	user_data  = SHA-256("ironvise-enclave-v1 client key" || C)
//	public_key = E, the enclave's X25519 public key (32 bytes)
//	pcrs       ⊇ the pinned PCRs (at least PCR0)
//	timestamp  within MaxAge (default 5 minutes) of the client's clock
//
// Keys. With Z the X25519 shared secret of the client's private key and E:
//
//	K(dir) = HKDF-SHA256(secret Z, salt N, info I(dir), 32 bytes)
//	I(dir) = "ironvise-enclave-v1 key " || dir || 0x00 || u16(len(S)) || S || C || E
//
// where dir is "client->enclave" or "enclave->client" and u16/u64 are
// big-endian. Each direction has its own key and its own message counter
// (seq), starting at 0 and increasing by one per message. A message is
// sealed with ChaCha20-Poly1305 under K(dir), with
//
//	nonce = 4 zero bytes || u64(seq)
//	ad    = "ironvise-enclave-v1 msg " || dir || 0x00 || u16(len(S)) || S || u64(seq)
//
// Inference, POST {URL}/v1/infer:
//
//	request  {"session": S, "seq": n, "ciphertext": seal("client->enclave", n, Q)}
//	response {"seq": m, "ciphertext": seal("enclave->client", m, A)}
//	Q = {"system": "...", "messages": [{"role": "user", "content": "..."}],
//	     "temperature": 0, "max_tokens": 0, "json": false}
//	A = {"text": "...", "model": "...", "error": "..."}
//
// Every request gets exactly one reply, so m is the n of its request. A
// nonempty "error" is the enclave's model failing; the channel stays usable.
// The client accepts only the next expected m; a reply that does not open, a
// wrong m, or any failure after a request was sent (no answer, an HTTP error)
// kills the channel: the counters of the two sides can no longer be known to
// agree, and a fresh attestation is needed.
//
// # Security
//
// Nothing is trusted before the attestation verifies: a document that fails
// any check is an error wrapping the internal/enclave/nitro sentinel (or
// [ErrStale], [ErrProtocol]) and there is no fallback to an unattested
// endpoint. The nonce and the timestamp make a recorded document useless to
// a replayer; user_data binds the document to this client's key, so a
// man in the middle cannot substitute its own key for the client's; and
// public_key is the key the client encrypts to, so only the measured enclave
// can open the prompts. Keys are per session and per direction, and the
// counters in nonce and additional data make a replayed, reordered,
// reflected or tampered message fail to open.
//
// An exported channel holds both directions' keys: whoever reads it can read
// and forge the guard's traffic. [Channel.Export] spends the channel it
// exports, because two holders of the same keys would reuse AEAD nonces.
//
// # Limitations
//
// The private X25519 key lives in a crypto/ecdh value that Go offers no way
// to wipe; it is dropped as soon as the keys are derived, and the shared
// secret is zeroed. The channel's keys are zeroed when it dies or is
// exported, but copies the Go runtime made (the AEAD's own key schedule, a
// moved stack) may survive until reused. Only the prompts and replies are
// encrypted: their sizes and timing, and the session id, are visible to the
// network (TLS hides them from all but the server's operator). A failed call
// ends the channel; re-attesting is the host's job. The enclave's URL is
// where it was reached, which the document does not attest.
package remote

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/nitro"
	"github.com/ironvise/ironvise/internal/enclave/record"
)

// Names of this client as an llm.Client.
// BindingLabel is [record.BindingLabel].
const BindingLabel = record.BindingLabel

const (
	// Backend is what [Client.Backend] returns.
	Backend = "enclave-remote"
	// DefaultModel is what [Client.Model] returns before the enclave named
	// its model.
	DefaultModel = "remote-enclave"
)

// DefaultMaxAge is how far an attestation document's timestamp may be from
// the client's clock when [Config].MaxAge is zero.
const DefaultMaxAge = 5 * time.Minute

// Sizes of the protocol's fields.
const (
	// NonceSize is the size of the attestation nonce.
	NonceSize = record.NonceSize
	// KeySize is the size of an X25519 public key and of a channel key.
	KeySize = record.KeySize
	// MaxSessionLen is the longest session id accepted.
	MaxSessionLen = 128
	// MaxBody caps every response body read from the enclave.
	MaxBody = 1 << 20
	// PCRSize is the size of a Nitro PCR (SHA-384).
	PCRSize = record.PCRSize
)

// The ways this package fails besides the nitro sentinels, compared with
// errors.Is.
var (
	// ErrConfig means a [Config] (or an imported channel) is not usable.
	ErrConfig = record.ErrConfig
	// ErrStale means the attestation document's timestamp is further from
	// the client's clock than MaxAge.
	ErrStale = errors.New("ironvise/remote: attestation document is not fresh")
	// ErrProtocol means the enclave answered outside the protocol: an HTTP
	// error, a body that is not the documented JSON, or one too large.
	ErrProtocol = errors.New("ironvise/remote: enclave answered outside the protocol")
	// ErrChannel means a message did not open, came out of order, or the
	// channel is dead (an earlier failure, [Channel.Close] or
	// [Channel.Export]).
	ErrChannel = errors.New("ironvise/remote: channel failure")
	// ErrModel means the enclave's model reported a failure; the channel
	// stays usable.
	ErrModel = errors.New("ironvise/remote: the enclave's model failed")
	// ErrRecord means a recorded attestation is malformed or says something
	// its document does not.
	ErrRecord = record.ErrRecord
)

// Config says which enclave to attest and what it must prove.
type Config struct {
	// URL is the enclave's base URL (ECTO_ENCLAVE_REMOTE_URL): https, or
	// http to a loopback IP address for tests and local development.
	URL string
	// PCRs are the pinned measurements: PCR index to its 48-byte value. PCR0
	// (the enclave image) is required.
	PCRs map[int][]byte
	// Roots replaces the pinned AWS Nitro Enclaves root. It is for tests
	// only: nil, as it always is in production, means the pinned root.
	Roots *x509.CertPool
	// HTTPClient carries the requests; nil means a client of its own.
	// Redirects are never followed.
	HTTPClient *http.Client
	// Now is the client's clock; nil means time.Now.
	Now func() time.Time
	// MaxAge bounds the distance between the document's timestamp and Now;
	// zero means DefaultMaxAge.
	MaxAge time.Duration
}

// validate checks cfg and returns its base URL without a trailing slash.
func (cfg *Config) validate() (string, error) {
	base, err := checkURL(cfg.URL)
	if err != nil {
		return "", err
	}
	if err := checkPCRs(cfg.PCRs); err != nil {
		return "", err
	}
	if cfg.MaxAge < 0 {
		return "", fmt.Errorf("remote: config MaxAge %s is negative: %w", cfg.MaxAge, ErrConfig)
	}
	return base, nil
}

// checkURL checks an enclave base URL and returns it without a trailing
// slash.
func checkURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("remote: enclave URL %q: %w", raw, errors.Join(err, ErrConfig))
	}
	if u.Host == "" || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("remote: enclave URL %q must be scheme://host[:port][/path] without user, query or fragment: %w", raw, ErrConfig)
	}
	switch u.Scheme {
	case "https":
	case "http":
		// Plain HTTP would show the session id and the traffic's shape to
		// the network, and lets anyone on the path cut the channel; allow
		// it only where no network is crossed. A name ("localhost") is
		// refused because a resolver could send it elsewhere.
		ip := net.ParseIP(u.Hostname())
		if ip == nil || !ip.IsLoopback() {
			return "", fmt.Errorf("remote: enclave URL %q: http is allowed only to a loopback IP address, use https: %w", raw, ErrConfig)
		}
	default:
		return "", fmt.Errorf("remote: enclave URL %q: scheme must be https: %w", raw, ErrConfig)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// attestRequest and attestResponse are the JSON bodies of /v1/attest.
type attestRequest struct {
	Nonce           []byte `json:"nonce"`
	ClientPublicKey []byte `json:"client_public_key"`
}

type attestResponse struct {
	Session             string `json:"session"`
	AttestationDocument []byte `json:"attestation_document"`
}

// Attest attests the enclave at cfg.URL and opens a channel to it. It
// returns the channel and the record of the verified attestation; any
// failed check is an error and no channel.
func Attest(ctx context.Context, cfg Config) (*Channel, *enclave.Remote, error) {
	base, err := cfg.validate()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	maxAge := cfg.MaxAge
	if maxAge == 0 {
		maxAge = DefaultMaxAge
	}

	nonce := make([]byte, NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, bug(err)
	}
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, bug(err)
	}
	clientPub := priv.PublicKey().Bytes()

	var resp attestResponse
	err = postJSON(ctx, httpClient(cfg.HTTPClient), base+"/v1/attest", attestRequest{Nonce: nonce, ClientPublicKey: clientPub}, &resp)
	if err != nil {
		return nil, nil, fmt.Errorf("remote: attest %s: %w", base, err)
	}
	if err := checkSession(resp.Session); err != nil {
		return nil, nil, fmt.Errorf("remote: attest %s: %w", base, err)
	}

	binding := ClientKeyBinding(clientPub)
	doc, err := nitro.Verify(resp.AttestationDocument, nitro.Options{
		Roots:    cfg.Roots,
		Nonce:    nonce,
		PCRs:     cfg.PCRs,
		UserData: binding,
		// The chain must be valid now, not merely when the document says
		// it was made.
		Time: now(),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("remote: attest %s: %w", base, err)
	}
	// The nonce already proves the document is an answer to this request;
	// the timestamp check also refuses an enclave whose clock (and so its
	// certificates' validity) is far off.
	if d := now().Sub(doc.Timestamp); d > maxAge || d < -maxAge {
		return nil, nil, fmt.Errorf("remote: attest %s: document timestamp %s is %s from the client's clock, more than %s: %w",
			base, doc.Timestamp.UTC().Format(time.RFC3339), d.Round(time.Second), maxAge, ErrStale)
	}
	enclavePub, err := enclaveKey(doc.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("remote: attest %s: %w", base, err)
	}
	shared, err := priv.ECDH(enclavePub)
	if err != nil {
		// A low-order point gives an all-zero secret that an attacker
		// knows; crypto/ecdh refuses it.
		return nil, nil, fmt.Errorf("remote: attest %s: enclave public key: %w", base, errors.Join(err, nitro.ErrBinding))
	}
	c2e, e2c, err := deriveKeys(shared, nonce, resp.Session, clientPub, doc.PublicKey)
	clear(shared)
	if err != nil {
		return nil, nil, err
	}
	ch := newClientChannel(base, resp.Session, c2e, e2c)
	clear(c2e[:])
	clear(e2c[:])

	pinned := make(map[int]string, len(cfg.PCRs))
	for i, v := range cfg.PCRs {
		pinned[i] = hex.EncodeToString(v)
	}
	rec := &enclave.Remote{
		URL:              base,
		Document:         bytes.Clone(resp.AttestationDocument),
		Nonce:            nonce,
		ClientPublicKey:  clientPub,
		EnclavePublicKey: bytes.Clone(doc.PublicKey),
		PinnedPCRs:       pinned,
		ModuleID:         doc.ModuleID,
		Timestamp:        doc.Timestamp.UTC(),
	}
	return ch, rec, nil
}

// checkSession checks a session id.
func checkSession(s string) error {
	// The id goes into key derivation with a 16-bit length and into logs;
	// bound it and keep it printable so it cannot forge log lines.
	if s == "" || len(s) > MaxSessionLen {
		return fmt.Errorf("session id of %d bytes, want 1 to %d: %w", len(s), MaxSessionLen, ErrProtocol)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return fmt.Errorf("session id %q is not printable ASCII: %w", s, ErrProtocol)
		}
	}
	return nil
}

// VerifyRecord is [record.Verify].
func VerifyRecord(r *enclave.Remote, roots *x509.CertPool) error { return record.Verify(r, roots) }

// ClientKeyBinding is [record.ClientKeyBinding].
func ClientKeyBinding(pub []byte) []byte { return record.ClientKeyBinding(pub) }

func checkPCRs(pcrs map[int][]byte) error { return record.CheckPCRs(pcrs) }

func enclaveKey(b []byte) (*ecdh.PublicKey, error) { return record.EnclaveKey(b) }

// httpClient returns a copy of hc (or of a zero client) that never follows
// a redirect.
func httpClient(hc *http.Client) *http.Client {
	var c http.Client
	if hc != nil {
		c = *hc
	}
	// A redirect would resend the request body to a place the
	// configuration did not name; the channel is encrypted, but the
	// attestation request and the session id need not travel further.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// postJSON posts in as JSON to u and decodes a 200 answer of at most
// MaxBody bytes into out, refusing unknown fields and trailing data.
func postJSON(ctx context.Context, hc *http.Client, u string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return bug(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// An enclave (or anything posing as one) must not make the guard
	// worker read without bound.
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return err
	}
	if len(b) > MaxBody {
		return fmt.Errorf("response body is larger than %d bytes: %w", MaxBody, ErrProtocol)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %q: %w", resp.StatusCode, truncate(b, 200), ErrProtocol)
	}
	if err := decodeStrict(b, out); err != nil {
		return fmt.Errorf("response body: %w", errors.Join(err, ErrProtocol))
	}
	return nil
}

// decodeStrict decodes one JSON value from b into out, refusing unknown
// fields and anything after the value.
func decodeStrict(b []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// truncate returns at most n bytes of b as a string.
func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// bug marks a failure that cannot happen (crypto/rand or json.Marshal of
// this package's own types failing).
func bug(err error) error { return fmt.Errorf("remote: internal error (please report): %w", err) }
