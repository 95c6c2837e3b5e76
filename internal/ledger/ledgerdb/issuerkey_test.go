package ledgerdb

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestIssuerKeyCustody is issue 23 item 5: with ECTO_KEY_PASSPHRASE the
// issuer key file is encrypted (a new one, and a plaintext one found is
// encrypted in place, keeping its key id), it opens only with the
// passphrase, and ECTO_ISSUER_KEY_FILE keeps it outside the data dir.
func TestIssuerKeyCustody(t *testing.T) {
	ctx := context.Background()
	open := func(dir, keyFile string, pass ledger.Secret) (*ledger.Ledger, error) {
		return Open(ctx, "", 0, ledger.Options{DataDir: dir, IssuerKeyFile: keyFile, Passphrase: pass, CheckpointInterval: -1})
	}
	t.Run("plaintext key encrypted in place", func(t *testing.T) {
		dir := t.TempDir()
		l, err := open(dir, "", "")
		if err != nil {
			t.Fatal(err)
		}
		id := l.InstanceID()
		l.Close(ctx)
		if b, _ := os.ReadFile(ledger.IssuerKeyPath(dir)); !bytes.Contains(b, []byte("BEGIN PRIVATE KEY")) {
			t.Fatalf("without a passphrase the key is plain PKCS#8:\n%s", b)
		}
		if l, err = open(dir, "", "correct horse"); err != nil {
			t.Fatal(err)
		}
		if l.InstanceID() != id {
			t.Fatalf("instance id %s after encryption; want %s", l.InstanceID(), id)
		}
		l.Close(ctx)
		b, _ := os.ReadFile(ledger.IssuerKeyPath(dir))
		if bytes.Contains(b, []byte("BEGIN PRIVATE KEY")) || !bytes.Contains(b, []byte("IRONVISE ENCRYPTED PRIVATE KEY")) {
			t.Fatalf("the key file is still readable without the passphrase:\n%s", b)
		}
		if _, _, err := ledger.LoadOrCreateIssuerKeyAt(ledger.IssuerKeyPath(dir), ""); !errors.Is(err, ledger.ErrPassphraseRequired) {
			t.Fatalf("load without the passphrase: %v; want ErrPassphraseRequired", err)
		}
		if _, _, err := ledger.LoadOrCreateIssuerKeyAt(ledger.IssuerKeyPath(dir), "wrong"); !errors.Is(err, ledger.ErrPassphrase) {
			t.Fatalf("load with a wrong passphrase: %v; want ErrPassphrase", err)
		}
		if _, err := open(dir, "", ""); err == nil {
			t.Fatal("a passphrase ledger opened without ECTO_KEY_PASSPHRASE")
		}
	})
	t.Run("key file outside the data dir", func(t *testing.T) {
		dir := t.TempDir()
		keyFile := filepath.Join(t.TempDir(), "elsewhere", "issuer.key")
		l, err := open(dir, keyFile, "correct horse")
		if err != nil {
			t.Fatal(err)
		}
		l.Close(ctx)
		if _, err := os.Stat(ledger.IssuerKeyPath(dir)); !os.IsNotExist(err) {
			t.Fatalf("a key was written in the data dir too: %v", err)
		}
		if b, err := os.ReadFile(keyFile); err != nil || !bytes.Contains(b, []byte("IRONVISE ENCRYPTED PRIVATE KEY")) {
			t.Fatalf("key file %s: %v\n%s", keyFile, err, b)
		}
		if l, err = open(dir, keyFile, "correct horse"); err != nil {
			t.Fatalf("reopen: %v", err)
		}
		l.Close(ctx)
	})
}
