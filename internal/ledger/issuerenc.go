package ledger

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/crypto/argon2"
)

// The issuer key file under ECTO_KEY_PASSPHRASE: a PEM block of this type
// whose bytes are nonce ‖ AES-256-GCM(PKCS#8 DER), under a key derived
// from the passphrase with Argon2id (the parameters and the random salt
// are in the PEM headers, so they can change without a new format). A
// copy of the data directory then no longer holds a usable signing key.
const (
	encryptedKeyPEM = "IRONVISE ENCRYPTED PRIVATE KEY"
	issuerKeyAAD    = "ironvise/issuer-key/v1"
)

// sealIssuerDER encrypts a PKCS#8 DER key under passphrase.
func sealIssuerDER(der []byte, passphrase Secret) (*pem.Block, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("ledger: issuer key salt: %w", err)
	}
	aead, err := issuerAEAD(passphrase, salt, argonTime, argonMemory, argonThreads)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("ledger: issuer key nonce: %w", err)
	}
	return &pem.Block{Type: encryptedKeyPEM, Headers: map[string]string{
		"KDF": "argon2id", "Salt": hex.EncodeToString(salt),
		"Time": strconv.Itoa(argonTime), "Memory-KiB": strconv.Itoa(argonMemory), "Threads": strconv.Itoa(argonThreads),
	}, Bytes: aead.Seal(nonce, nonce, der, []byte(issuerKeyAAD))}, nil
}

// openIssuerDER decrypts what sealIssuerDER wrote.
func openIssuerDER(blk *pem.Block, passphrase Secret, path string) ([]byte, error) {
	if passphrase == "" {
		return nil, fmt.Errorf("%w: the issuer key %s is encrypted with ECTO_KEY_PASSPHRASE; set it", ErrPassphraseRequired, path)
	}
	h := blk.Headers
	salt, err := hex.DecodeString(h["Salt"])
	t, terr := strconv.ParseUint(h["Time"], 10, 32)
	m, merr := strconv.ParseUint(h["Memory-KiB"], 10, 32)
	p, perr := strconv.ParseUint(h["Threads"], 10, 8)
	// Bounds keep a planted file from making startup take hours or
	// gigabytes.
	if h["KDF"] != "argon2id" || err != nil || len(salt) < 16 || terr != nil || merr != nil || perr != nil ||
		t < 1 || t > 10 || m < 8*1024 || m > 1024*1024 || p < 1 || p > 16 {
		return nil, fmt.Errorf("ledger: issuer key %s: unreadable encryption headers", path)
	}
	aead, err := issuerAEAD(passphrase, salt, uint32(t), uint32(m), uint8(p))
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(blk.Bytes) < n+aead.Overhead() {
		return nil, fmt.Errorf("ledger: issuer key %s: truncated", path)
	}
	der, err := aead.Open(nil, blk.Bytes[:n], blk.Bytes[n:], []byte(issuerKeyAAD))
	if err != nil {
		return nil, fmt.Errorf("%w: ECTO_KEY_PASSPHRASE does not open the issuer key %s", ErrPassphrase, path)
	}
	return der, nil
}

func issuerAEAD(passphrase Secret, salt []byte, t, m uint32, p uint8) (cipher.AEAD, error) {
	block, err := aes.NewCipher(argon2.IDKey([]byte(passphrase), salt, t, m, p, 32))
	if err != nil {
		return nil, bug(fmt.Errorf("aes: %w", err))
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, bug(fmt.Errorf("gcm: %w", err))
	}
	return aead, nil
}

// replaceFile writes data to path through a temporary file (0600, as
// os.CreateTemp makes it), an fsync and a rename, so a crash leaves the
// old content or the new, never half of either: the issuer key and the
// remembered checkpoint are written this way.
func replaceFile(path string, data []byte) error { return writeReplacing(path, data, true) }

// writeReplacing is replaceFile, without the fsync when sync is false:
// the rename still never exposes a partly written file to a running
// system, but after a power cut the file may hold its old content or, on
// a file system that does not order a rename after the data it names,
// nothing at all.
func writeReplacing(path string, data []byte, sync bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(data); err == nil && sync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
