package native

import (
	"os"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestScratchMountPointIsShared: a long-lived tier mounts every command's
// scratch tmpfs on one host directory, which stays empty on the host: a
// file one command leaves in its scratch space is not there for the next
// command, nor on the host. Close removes the directory; a one-command
// tier makes and removes its own per command.
func TestScratchMountPointIsShared(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	first := run(t, tier, fx, `echo left > "$TMPDIR/left" && ls "$TMPDIR"`)
	contains(t, first, "left")
	scratchLeftNothing(t, tier, first)
	second := run(t, tier, fx, `ls -A "$TMPDIR"; echo END`)
	if second.Enforced.ScratchDir != first.Enforced.ScratchDir {
		t.Fatalf("scratch directories %s and %s: want one mount point", first.Enforced.ScratchDir, second.Enforced.ScratchDir)
	}
	if second.Stdout != "END\n" {
		t.Fatalf("the second command's scratch space is not fresh: %q", second.Stdout)
	}
	scratchLeftNothing(t, tier, second)
	// Each use refreshes its times, so that an age-based cleaner of the
	// temporary directory leaves a mount point in use alone.
	old := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(first.Enforced.ScratchDir, old, old); err != nil {
		t.Fatal(err)
	}
	run(t, tier, fx, "true")
	if st, err := os.Stat(first.Enforced.ScratchDir); err != nil || time.Since(st.ModTime()) > time.Hour {
		t.Fatalf("the mount point's times after a use: %v, %v", st.ModTime(), err)
	}
	tier.Close()
	absent(t, first.Enforced.ScratchDir)

	one := newTestTier(t, sandbox.Options{OneCommand: true})
	r := run(t, one, fx, `echo x > "$TMPDIR/x"`)
	if r.Enforced.ScratchDir == first.Enforced.ScratchDir {
		t.Fatal("a one-command tier used another tier's mount point")
	}
	scratchLeftNothing(t, one, r)
}

// TestScratchMountPointIsRemade: a mount point removed from under the tier
// (a cleaner of the temporary directory) is made again for the next
// command, which runs confined.
func TestScratchMountPointIsRemade(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	first := run(t, tier, fx, "true")
	if err := os.Remove(first.Enforced.ScratchDir); err != nil {
		t.Fatal(err)
	}
	second := run(t, tier, fx, `echo ok > "$TMPDIR/f" && cat "$TMPDIR/f"`)
	contains(t, second, "ok")
	if second.Enforced.ScratchDir == first.Enforced.ScratchDir {
		t.Fatal("the removed mount point was used again")
	}
	scratchLeftNothing(t, tier, second)
}

// TestCloseKeepsTheMountPointOfARunningCommand: Close while a command runs
// leaves the mount point until that command is done (removing it would
// detach the command's tmpfs), then removes it.
func TestCloseKeepsTheMountPointOfARunningCommand(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	p := prepare(t, tier, fx, `echo ok > "$TMPDIR/f" && cat "$TMPDIR/f"`)
	dir := p.scratch.dir
	tier.Close()
	if empty, err := emptyDir(dir); err != nil || !empty {
		t.Fatalf("the mount point of a prepared command: empty %v, %v", empty, err)
	}
	r := p.Start()
	contains(t, r, "ok")
	absent(t, dir)
}
