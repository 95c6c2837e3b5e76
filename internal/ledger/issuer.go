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
// ($ECTO_DATA_DIR/keys/issuer.ed25519, cli.md).
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
	path := IssuerKeyPath(dataDir)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("ledger: create key dir %s: %w", filepath.Dir(path), err)
	}
	k, err := readIssuerKey(path)
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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		k, err := readIssuerKey(path)
		return k, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("ledger: create issuer key %s: %w", path, err)
	}
	werr := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
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

func readIssuerKey(path string) (*SigningKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: issuer key %s: %w", path, err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("ledger: issuer key %s has mode %#o; other users could sign as this instance: run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: read issuer key %s: %w", path, err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("ledger: issuer key %s: not a PEM PRIVATE KEY", path)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("ledger: issuer key %s: %w", path, err)
	}
	priv, ok := parsed.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("ledger: issuer key %s: not an Ed25519 key", path)
	}
	return &SigningKey{priv: priv}, nil
}
