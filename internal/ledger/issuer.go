package ledger

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// IssuerKeyPath returns where the issuer key of a data dir lives
// ($ECTO_DATA_DIR/keys/issuer.ed25519, docs/design/cli.md#data-dir).
func IssuerKeyPath(dataDir string) string {
	return filepath.Join(dataDir, "keys", "issuer.ed25519")
}

// LoadOrCreateIssuerKey reads the issuer key of dataDir, creating it (mode
// 0600, in a 0700 keys directory) on first run. The file is a PEM PKCS#8
// Ed25519 private key, readable by standard tools.
//
// A key file that other users can read is refused: whoever reads it can
// sign checkpoints and decrypt session keys.
func LoadOrCreateIssuerKey(dataDir string) (key *SigningKey, created bool, err error) {
	if dataDir == "" {
		return nil, false, errors.New("ledger: issuer key: no data dir (set ECTO_DATA_DIR)")
	}
	return LoadOrCreateIssuerKeyAt(IssuerKeyPath(dataDir), "")
}

// LoadOrCreateIssuerKeyAt is LoadOrCreateIssuerKey for the key file at
// path (ECTO_ISSUER_KEY_FILE keeps it outside the data dir). With a
// passphrase (ECTO_KEY_PASSPHRASE) the file is encrypted under it
// (issuerenc.go): a new key is written encrypted, and a plaintext key
// found is encrypted in place, so a copy of the data directory alone no
// longer holds the key that signs checkpoints and certificates.
func LoadOrCreateIssuerKeyAt(path string, passphrase Secret) (key *SigningKey, created bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("ledger: create key dir %s: %w", filepath.Dir(path), err)
	}
	k, err := readIssuerKeyWith(path, passphrase)
	if err == nil {
		return k, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	k, err = GenerateSigningKey(rand.Reader)
	if err != nil {
		return nil, false, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k.priv)
	if err != nil {
		return nil, false, bug(fmt.Errorf("marshal issuer key: %w", err))
	}
	// O_EXCL: when two processes start at once, exactly one creates the
	// key and the other reads it, so both sign with the same key.
	blk := &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	if passphrase != "" {
		if blk, err = sealIssuerDER(der, passphrase); err != nil {
			return nil, false, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		k, err := readIssuerKeyWith(path, passphrase)
		return k, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("ledger: create issuer key %s: %w", path, err)
	}
	werr := pem.Encode(f, blk)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return nil, false, fmt.Errorf("ledger: write issuer key %s: %w", path, werr)
	}
	return k, true, nil
}

// readIssuerKeyWith reads the key at path, decrypting it with passphrase
// when it is encrypted, and encrypting a plaintext one in place when a
// passphrase is set.
func readIssuerKeyWith(path string, passphrase Secret) (*SigningKey, error) {
	k, blk, err := readIssuerKey(path, passphrase)
	if err != nil || passphrase == "" || blk.Type == encryptedKeyPEM {
		return k, err
	}
	enc, err := sealIssuerDER(blk.Bytes, passphrase)
	if err != nil {
		return nil, err
	}
	if err := replaceFile(path, pem.EncodeToMemory(enc)); err != nil {
		return nil, fmt.Errorf("ledger: encrypt issuer key %s with ECTO_KEY_PASSPHRASE: %w", path, err)
	}
	return k, nil
}

func readIssuerKey(path string, passphrase Secret) (*SigningKey, *pem.Block, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: issuer key %s: %w", path, err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, nil, fmt.Errorf("ledger: issuer key %s has mode %#o; other users could sign as this instance: run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: read issuer key %s: %w", path, err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || (blk.Type != "PRIVATE KEY" && blk.Type != encryptedKeyPEM) {
		return nil, nil, fmt.Errorf("ledger: issuer key %s: not a PEM PRIVATE KEY", path)
	}
	der := blk.Bytes
	if blk.Type == encryptedKeyPEM {
		if der, err = openIssuerDER(blk, passphrase, path); err != nil {
			return nil, nil, err
		}
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: issuer key %s: %w", path, err)
	}
	priv, ok := parsed.(ed25519.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("ledger: issuer key %s: not an Ed25519 key", path)
	}
	return &SigningKey{priv: priv}, &pem.Block{Type: blk.Type, Bytes: der}, nil
}
