//go:build unix

package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestAcquireOwnerCreatesDataDir: serve can be the first command run on a
// data directory; taking the owner id creates the directory (private, as
// the ledger would) instead of failing to open its lock file.
func TestAcquireOwnerCreatesDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "data")
	o, err := acquireOwner(dir)
	if err != nil {
		t.Fatalf("acquireOwner on a data directory that does not exist yet: %v", err)
	}
	defer o.release()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Fatalf("data directory mode %o, want 700", perm)
	}
	if _, err := acquireOwner(dir); !errors.Is(err, errOwnerLocked) {
		t.Fatalf("a second owner of a held directory: %v, want errOwnerLocked", err)
	}
}
