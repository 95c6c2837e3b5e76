//go:build linux

package native

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestSpareSeesMountsMadeAfterItStarted: a launcher's mount namespace is
// a copy of IronVise's taken when it starts; where mounts do not
// propagate, one made afterwards (here a tmpfs covering part of the
// workspace) is missing from that copy. A command must see the mount
// table as it is when the command starts — not the files the host has
// covered since, and not miss the ones it has added.
func TestSpareSeesMountsMadeAfterItStarted(t *testing.T) {
	fx := newFixture(t)
	cover := filepath.Join(fx.ws, "cover")
	if err := os.Mkdir(cover, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cover, "covered.txt"), []byte("covered\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tier := newTestTier(t, sandbox.Options{})
	waitReady(t, tier)
	if err := unix.Mount("tmpfs", cover, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(cover, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(cover, "mounted.txt"), []byte("mounted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, tier, fx, "ls cover")
	if strings.Contains(r.Stdout, "covered.txt") || !strings.Contains(r.Stdout, "mounted.txt") {
		t.Fatalf("the command saw the mount table of before its start:\n%s", r.Observation())
	}
}
