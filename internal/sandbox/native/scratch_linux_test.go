package native

import (
	"fmt"
	"os"
	"path/filepath"
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

// TestEmptyDir: a directory with nothing but "." and ".." is empty; one
// entry of any kind, or more entries than one read returns, is not; a
// missing path or a file is an error, never "empty".
func TestEmptyDir(t *testing.T) {
	dir := t.TempDir()
	check := func(what string, p string, wantEmpty, wantErr bool) {
		t.Helper()
		empty, err := emptyDir(p)
		if (err != nil) != wantErr || empty != wantEmpty {
			t.Fatalf("%s: empty %v, err %v; want empty %v, an error %v", what, empty, err, wantEmpty, wantErr)
		}
	}
	check("a fresh directory", dir, true, false)
	must(t, os.Mkdir(filepath.Join(dir, ".hidden"), 0o700))
	check("a directory holding a dot-directory", dir, false, false)
	must(t, os.Remove(filepath.Join(dir, ".hidden")))
	check("the directory emptied again", dir, true, false)
	many := filepath.Join(dir, "many")
	must(t, os.Mkdir(many, 0o700))
	for i := range 300 {
		must(t, os.WriteFile(filepath.Join(many, fmt.Sprintf("a-long-name-to-fill-the-buffer-%03d", i)), nil, 0o600))
	}
	check("a directory of 300 files", many, false, false)
	check("a missing path", filepath.Join(dir, "missing"), false, true)
	check("a file", filepath.Join(many, "a-long-name-to-fill-the-buffer-000"), false, true)
}
