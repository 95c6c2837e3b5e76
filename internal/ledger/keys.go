package ledger

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
)

// incomparable makes a struct non-comparable with ==, so secret-bearing
// values can only be compared through their constant-time Equal.
type incomparable [0]func()

// SigningKey is an Ed25519 private key: a session key or the issuer key.
// It is secret-bearing: not comparable with ==, compared in constant time,
// and redacted by String, GoString and LogValue so it cannot reach a log or
// CLI output by accident.
type SigningKey struct {
	_    incomparable
	priv ed25519.PrivateKey
}

// GenerateSigningKey returns a new key drawn from rand (crypto/rand.Reader
// in production).
func GenerateSigningKey(rand io.Reader) (*SigningKey, error) {
	_, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return nil, fmt.Errorf("ledger: generate ed25519 key: %w", err)
	}
	return &SigningKey{priv: priv}, nil
}

// SigningKeyFromSeed returns the key of a 32-byte Ed25519 seed.
func SigningKeyFromSeed(seed []byte) (*SigningKey, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("ledger: ed25519 seed: got %d bytes, want %d", len(seed), ed25519.SeedSize)
	}
	return &SigningKey{priv: ed25519.NewKeyFromSeed(seed)}, nil
}

// Public returns the public half.
func (k *SigningKey) Public() ed25519.PublicKey {
	return k.priv.Public().(ed25519.PublicKey)
}

// KeyID returns the key id of the public half (see [KeyID]).
func (k *SigningKey) KeyID() string { return KeyID(k.Public()) }

// Sign signs an event hash: signature = Ed25519(key, hash)
// (docs/design/ledger.md#signing-keys). It signs exactly 32 bytes, and
// nothing else the key signs is 32 bytes long (see SignJWS).
func (k *SigningKey) Sign(h Hash) []byte { return ed25519.Sign(k.priv, h[:]) }

// SignJWS returns the EdDSA signature of a JWS signing input,
// BASE64URL(header) "." BASE64URL(payload) (RFC 7515, RFC 8037), as the
// issuer signs a verifiable credential. It signs the input itself, which is
// what EdDSA JWS verifiers check, so a credential verifies anywhere.
//
// It is separated from event-hash signing by the messages each accepts, not
// by a context string: Ed25519ctx or a prefix would make the signature
// unverifiable by ordinary JWS libraries. Sign signs exactly 32 bytes;
// SignJWS refuses an input of 32 bytes and anything that is not a JWS
// signing input whose header is a JSON object naming alg EdDSA. So a
// signature over an event hash is never a signature over a JWS input the
// key produced, and the reverse; and no caller can make the key sign
// arbitrary bytes — the private key never leaves this type.
func (k *SigningKey) SignJWS(signingInput []byte) ([]byte, error) {
	if err := checkJWSInput(signingInput); err != nil {
		return nil, fmt.Errorf("ledger: sign jws: %w", err)
	}
	return ed25519.Sign(k.priv, signingInput), nil
}

// checkJWSInput accepts a JWS signing input: two non-empty base64url
// (unpadded) parts joined by one dot, longer than an event hash, the first
// decoding to a JSON object with "alg":"EdDSA".
func checkJWSInput(in []byte) error {
	if len(in) <= len(Hash{}) {
		return fmt.Errorf("signing input of %d bytes: a JWS input is longer than an event hash", len(in))
	}
	header, payload, ok := bytes.Cut(in, []byte("."))
	if !ok || len(header) == 0 || len(payload) == 0 || bytes.IndexByte(payload, '.') >= 0 {
		return errors.New("not header.payload")
	}
	for _, part := range [][]byte{header, payload} {
		if bytes.IndexFunc(part, func(r rune) bool { return !isBase64URL(r) }) >= 0 {
			return errors.New("a part is not unpadded base64url")
		}
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(string(header))
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(raw, &h); err != nil || h.Alg != "EdDSA" {
		return errors.New(`header is not a JSON object with "alg":"EdDSA"`)
	}
	return nil
}

func isBase64URL(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// seed returns the 32-byte seed; only key storage (encrypted under a KEK
// or the issuer passphrase) uses it. The type has no exported way to the
// private key: no text or binary marshalling.
func (k *SigningKey) seed() []byte { return k.priv.Seed() }

// Equal reports whether k and o are the same key, in constant time.
func (k *SigningKey) Equal(o *SigningKey) bool {
	if k == nil || o == nil {
		return k == o
	}
	return subtle.ConstantTimeCompare(k.priv, o.priv) == 1
}

// String implements fmt.Stringer without revealing the key.
func (k *SigningKey) String() string {
	if k == nil {
		return "SigningKey(nil)"
	}
	return "SigningKey(" + k.KeyID() + ", private half redacted)"
}

// GoString implements fmt.GoStringer without revealing the key.
func (k *SigningKey) GoString() string { return k.String() }

// LogValue implements slog.LogValuer without revealing the key.
func (k *SigningKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// KeyID names a public key in event rows: the first 16 hex digits of the
// SHA-256 of the 32 key bytes.
func KeyID(pub ed25519.PublicKey) string {
	s := sha256.Sum256(pub)
	return hex.EncodeToString(s[:8])
}

// DIDKey returns the did:key of an Ed25519 public key:
// "did:key:z" + base58btc(0xed 0x01 ‖ key)
// (docs/design/api.md#session-create).
func DIDKey(pub ed25519.PublicKey) string {
	b := append([]byte{0xed, 0x01}, pub...)
	return "did:key:z" + base58(b)
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58 encodes b in the Bitcoin base58 alphabet (leading zero bytes
// become '1').
func base58(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	n := new(big.Int).SetBytes(b)
	radix := big.NewInt(58)
	mod := new(big.Int)
	var out []byte
	for n.Sign() > 0 {
		n.DivMod(n, radix, mod)
		out = append(out, base58Alphabet[mod.Int64()])
	}
	for range zeros {
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// parsePublicKeyHex parses 64 hex digits into an Ed25519 public key.
func parsePublicKeyHex(s string) (ed25519.PublicKey, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key %q: want 64 hex digits", s)
	}
	return ed25519.PublicKey(b), nil
}
