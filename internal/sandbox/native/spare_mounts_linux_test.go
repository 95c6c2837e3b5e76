//go:build linux

package native

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// coverFixture is a fixture whose workspace has a directory "cover"
// holding covered.txt, for a test to mount over.
func coverFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	fx := newFixture(t)
	cover := filepath.Join(fx.ws, "cover")
	if err := os.Mkdir(cover, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cover, "covered.txt"), []byte("covered\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return fx, cover
}

// TestSpareSeesMountsMadeAfterItStarted: a launcher's mount namespace is
// a copy of IronVise's taken when it starts; where mounts do not
// propagate, one made afterwards (here a tmpfs covering part of the
// workspace) is missing from that copy. A command must see the mount
// table as it is when the command starts — not the files the host has
// covered since, and not miss the ones it has added.
func TestSpareSeesMountsMadeAfterItStarted(t *testing.T) {
	fx, cover := coverFixture(t)
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

// TestSpareKeyIsTheTableItCopied: the launcher kept ready after a command
// is cloned when the command ends. A mount made while the command ran and
// removed after that clone must not leave the next command in the copy
// that still has it, although the table is back to what it was before
// the first command.
func TestSpareKeyIsTheTableItCopied(t *testing.T) {
	fx, cover := coverFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	first := waitReady(t, tier)
	mounted := make(chan error, 1)
	go func() {
		// The first command has taken the ready launcher once it exec'd;
		// mount while it sleeps.
		for {
			tier.spares.mu.Lock()
			taken := tier.spares.ready != first
			tier.spares.mu.Unlock()
			if taken {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		mounted <- unix.Mount("tmpfs", cover, "tmpfs", 0, "size=1m")
	}()
	run(t, tier, fx, "sleep 0.5")
	if err := <-mounted; err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	next := waitReady(t, tier)
	if next == first {
		t.Fatal("no new launcher after the command")
	}
	if err := unix.Unmount(cover, 0); err != nil {
		t.Fatal(err)
	}
	r := run(t, tier, fx, "ls cover")
	if !strings.Contains(r.Stdout, "covered.txt") {
		t.Fatalf("the command ran in a launcher holding a mount removed since:\n%s", r.Observation())
	}
}
