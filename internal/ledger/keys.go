package ledger

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"strings"
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
// (docs/design/ledger.md#signing-keys).
func (k *SigningKey) Sign(h Hash) []byte { return ed25519.Sign(k.priv, h[:]) }

// seed returns the 32-byte seed; only key storage uses it.
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

// signingKeyTextPrefix types the text encoding so a seed is never mistaken
// for a public key or a hash.
const signingKeyTextPrefix = "ed25519-seed:"

// MarshalText implements encoding.TextMarshaler with a typed encoding,
// "ed25519-seed:<hex>". It reveals the key: only key storage calls it.
func (k *SigningKey) MarshalText() ([]byte, error) {
	return []byte(signingKeyTextPrefix + hex.EncodeToString(k.seed())), nil
}

// UnmarshalText implements encoding.TextUnmarshaler for MarshalText's form.
func (k *SigningKey) UnmarshalText(b []byte) error {
	s, ok := strings.CutPrefix(string(b), signingKeyTextPrefix)
	if !ok {
		return fmt.Errorf("ledger: signing key text: missing %q prefix", signingKeyTextPrefix)
	}
	seed, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("ledger: signing key text: %w", err)
	}
	nk, err := SigningKeyFromSeed(seed)
	if err != nil {
		return err
	}
	k.priv = nk.priv
	return nil
}

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
