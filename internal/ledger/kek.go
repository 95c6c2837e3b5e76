package ledger

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"

	"golang.org/x/crypto/argon2"
)

// KEK kinds recorded beside each encrypted key, so a reader knows which
// key-encryption key opens it.
const (
	kekIssuer = "issuer"
	// kekPassphrase is the passphrase KEK of ledgers written before the
	// work factor: HKDF only, still read so their keys stay usable.
	kekPassphrase = "passphrase"
	// kekPassphraseArgon2id is the passphrase KEK every new key is
	// written under: Argon2id, so guessing a passphrase against a key row
	// or the check value costs each guess tens of milliseconds and 64 MiB
	// instead of a microsecond of HKDF.
	kekPassphraseArgon2id = "passphrase-argon2id"
)

// Argon2id parameters of the passphrase KEK: RFC 9106 §4's second
// recommended option (t=3, m=64 MiB, p=4).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024 // KiB
	argonThreads = 4
)

// kek is a key-encryption key for session private keys
// (docs/design/ledger.md#signing-keys): AES-256-GCM under a key derived with
// HKDF-SHA256.
type kek struct {
	_    incomparable
	kind string
	aead cipher.AEAD
}

// newKEK derives the KEK of kind from secret. The salt binds it to one
// ledger (its instance id), so the same passphrase gives unrelated keys in
// unrelated ledgers.
func newKEK(kind string, secret []byte, instanceID string) (*kek, error) {
	key, err := hkdf.Key(sha256.New, secret, []byte("ironvise/instance/"+instanceID), "ironvise/kek/v1/"+kind, 32)
	if err != nil {
		return nil, bug(fmt.Errorf("hkdf: %w", err))
	}
	return aeadKEK(kind, key)
}

// newPassphraseKEK derives the Argon2id passphrase KEK. The salt binds it
// to one ledger, like newKEK's.
func newPassphraseKEK(passphrase []byte, instanceID string) (*kek, error) {
	salt := sha256.Sum256([]byte("ironvise/kek/v2/" + kekPassphraseArgon2id + "/" + instanceID))
	return aeadKEK(kekPassphraseArgon2id, argon2.IDKey(passphrase, salt[:], argonTime, argonMemory, argonThreads, 32))
}

// aeadKEK makes the AES-256-GCM KEK of kind from a 32-byte key.
func aeadKEK(kind string, key []byte) (*kek, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, bug(fmt.Errorf("aes: %w", err))
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, bug(fmt.Errorf("gcm: %w", err))
	}
	return &kek{kind: kind, aead: aead}, nil
}

// seal encrypts plaintext; aad binds the ciphertext to its row so it cannot
// be moved to another session or key slot. The output is nonce ‖ ciphertext.
func (k *kek) seal(plaintext, aad []byte) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("ledger: kek nonce: %w", err)
	}
	return k.aead.Seal(nonce, nonce, plaintext, aad), nil
}

// open decrypts what seal produced.
func (k *kek) open(ciphertext, aad []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(ciphertext) < n+k.aead.Overhead() {
		return nil, errors.New("ciphertext too short")
	}
	return k.aead.Open(nil, ciphertext[:n], ciphertext[n:], aad)
}

// kekCheck is the plaintext of the per-ledger check value that tells a
// wrong passphrase apart from a damaged key row.
var kekCheckPlaintext = []byte("ironvise kek check v1")
