//go:build linux

package native

import (
	"crypto/sha256"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// hiddenFixture is a home with protected paths: a link to a vault, a
// missing one, and one under a directory link.
type hiddenFixture struct {
	dir  string
	list []string
}

func newHiddenFixture(t *testing.T) *hiddenFixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"home/u/.config", "vault", "vault2", "elsewhere/.config/gh"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "vault"), filepath.Join(dir, "home/u/.ssh")); err != nil {
		t.Fatal(err)
	}
	f := &hiddenFixture{dir: dir}
	for _, p := range []string{"home/u/.ssh", "home/u/.aws", "home/u/.config/gh", "home/v/.netrc"} {
		f.list = append(f.list, filepath.Join(dir, p))
	}
	return f
}

func (f *hiddenFixture) path(p string) string { return filepath.Join(f.dir, p) }

// checkFresh fails unless the cache answers what resolving the list anew
// answers now: the same paths, and the same of them absent.
func checkFresh(t *testing.T, c *hiddenCache, f *hiddenFixture, what string) []string {
	t.Helper()
	got, want := c.resolve(f.list), resolveHidden(f.list)
	if !sameHidden(got, want) {
		t.Fatalf("%s: the cache answered\n%q, absent %q\nresolving anew answers\n%q, absent %q", what,
			got.Paths, slices.Sorted(maps.Keys(got.Absent)), want.Paths, slices.Sorted(maps.Keys(want.Absent)))
	}
	return got.Paths
}

// sameHidden reports whether two answers list the same paths with the
// same of them absent.
func sameHidden(a, b sandbox.Hidden) bool {
	return slices.Equal(a.Paths, b.Paths) && maps.Equal(a.Absent, b.Absent)
}

// checkKept is checkFresh, after which the cache must have kept its
// answer. A mount or unmount anywhere on the host while the list is
// resolved (another test's, podman's) rightly makes the cache keep none:
// "the mount table changed while the list was resolved". The test cannot
// prevent that, so the next command resolves again, a few times at most.
func checkKept(t *testing.T, c *hiddenCache, f *hiddenFixture, what string) []string {
	t.Helper()
	for try := 1; ; try++ {
		got := checkFresh(t, c, f, what)
		switch {
		case c.fd >= 0:
			return got
		case try < 10 && strings.Contains(c.why, "mount table changed"):
		default:
			t.Fatalf("%s: the answer was not kept: %s", what, c.why)
		}
	}
}

// sameAnswer fails when the cache resolved the list again since it held
// fd under the mount table mounts, unless the host's mount table moved
// meanwhile (checkKept), which rightly makes it resolve again.
func sameAnswer(t *testing.T, c *hiddenCache, fd int, mounts [sha256.Size]byte, why string) {
	t.Helper()
	if c.fd != fd && c.mounts == mounts {
		t.Fatal(why)
	}
}

// TestHiddenCacheKeepsItsAnswer: with nothing changed, the second command
// gets the kept answer (the same watch descriptor, no new resolution), and
// a change to a name the answer did not read keeps it.
func TestHiddenCacheKeepsItsAnswer(t *testing.T) {
	f := newHiddenFixture(t)
	c := newHiddenCache()
	t.Cleanup(c.close)
	first := checkKept(t, c, f, "first command")
	if !slices.Contains(first, f.path("vault")) {
		t.Fatalf("the link's target is missing: %q", first)
	}
	fd, mounts := c.fd, c.mounts
	checkKept(t, c, f, "second command")
	sameAnswer(t, c, fd, mounts, "the answer was resolved again with nothing changed")
	fd, mounts = c.fd, c.mounts
	// Names no path goes through: a file beside the protected ones, a
	// directory made and removed (the scratch directories of commands).
	if err := os.WriteFile(f.path("home/u/notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.path("home/u/scratch"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.path("home/u/scratch")); err != nil {
		t.Fatal(err)
	}
	checkKept(t, c, f, "after unrelated changes")
	sameAnswer(t, c, fd, mounts, "a change to a name no protected path reads dropped the answer")
}

// TestHiddenCacheSeesEveryChange: each way a protected path's real
// location can change is seen by the next command, whose answer is then
// what resolving anew gives. Each case would fail with an answer kept
// regardless (the first check after each change compares with a fresh
// resolution, and the case asserts the new location is in it).
func TestHiddenCacheSeesEveryChange(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, f *hiddenFixture)
		// now is a path the answer must list after the change.
		now string
	}{
		{"a link re-pointed (unlink, symlink)", func(t *testing.T, f *hiddenFixture) {
			must(t, os.Remove(f.path("home/u/.ssh")))
			must(t, os.Symlink(f.path("vault2"), f.path("home/u/.ssh")))
		}, "vault2"},
		{"a link renamed over another", func(t *testing.T, f *hiddenFixture) {
			must(t, os.Symlink(f.path("vault2"), f.path("home/u/.ssh.new")))
			must(t, os.Rename(f.path("home/u/.ssh.new"), f.path("home/u/.ssh")))
		}, "vault2"},
		{"a missing path created as a link", func(t *testing.T, f *hiddenFixture) {
			must(t, os.Symlink(f.path("vault2"), f.path("home/u/.aws")))
		}, "vault2"},
		{"a missing home created with a link inside", func(t *testing.T, f *hiddenFixture) {
			must(t, os.MkdirAll(f.path("home/v"), 0o755))
			must(t, os.Symlink(f.path("vault2"), f.path("home/v/.netrc")))
		}, "vault2"},
		{"a directory on the path replaced by a link", func(t *testing.T, f *hiddenFixture) {
			must(t, os.Rename(f.path("home/u/.config"), f.path("home/u/.config.old")))
			must(t, os.Symlink(f.path("elsewhere/.config"), f.path("home/u/.config")))
		}, "elsewhere/.config/gh"},
		{"an ancestor renamed away and a link put in its place", func(t *testing.T, f *hiddenFixture) {
			must(t, os.Rename(f.path("home"), f.path("home.old")))
			must(t, os.MkdirAll(f.path("home/u"), 0o755))
			must(t, os.Symlink(f.path("vault2"), f.path("home/u/.ssh")))
		}, "vault2"},
		{"a watched directory removed and made again", func(t *testing.T, f *hiddenFixture) {
			must(t, os.RemoveAll(f.path("home/u/.config")))
			must(t, os.Symlink(f.path("elsewhere/.config"), f.path("home/u/.config")))
		}, "elsewhere/.config/gh"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newHiddenFixture(t)
			c := newHiddenCache()
			t.Cleanup(c.close)
			before := checkKept(t, c, f, "before")
			if slices.Contains(before, f.path(tc.now)) {
				t.Fatalf("the fixture already lists %s", tc.now)
			}
			tc.change(t, f)
			after := checkKept(t, c, f, "after the change")
			if !slices.Contains(after, f.path(tc.now)) {
				t.Fatalf("after the change the answer lacks %s: %q", tc.now, after)
			}
		})
	}
}

// TestHiddenCacheSeesExistence: a protected path the kept answer found
// absent, and which the tier therefore does not send to the launcher, is
// present in the next command's answer as soon as it exists, however it
// came to be; one removed is absent in the next. Each case fails with an
// answer kept regardless: the path's state is asserted before and after.
func TestHiddenCacheSeesExistence(t *testing.T) {
	cases := []struct {
		name   string
		p      string // relative to the fixture
		change func(t *testing.T, f *hiddenFixture)
		absent bool // after the change
	}{
		{"a missing file written", "home/u/.aws", func(t *testing.T, f *hiddenFixture) {
			must(t, os.WriteFile(f.path("home/u/.aws"), []byte("key"), 0o600))
		}, false},
		{"a missing directory made", "home/u/.aws", func(t *testing.T, f *hiddenFixture) {
			must(t, os.Mkdir(f.path("home/u/.aws"), 0o700))
		}, false},
		{"a file renamed into place", "home/u/.aws", func(t *testing.T, f *hiddenFixture) {
			must(t, os.WriteFile(f.path("home/u/.aws.tmp"), []byte("key"), 0o600))
			must(t, os.Rename(f.path("home/u/.aws.tmp"), f.path("home/u/.aws")))
		}, false},
		{"a missing home made with the file inside", "home/v/.netrc", func(t *testing.T, f *hiddenFixture) {
			must(t, os.MkdirAll(f.path("home/v"), 0o755))
			must(t, os.WriteFile(f.path("home/v/.netrc"), []byte("machine x"), 0o600))
		}, false},
		{"a home renamed into place with the file inside", "home/v/.netrc", func(t *testing.T, f *hiddenFixture) {
			must(t, os.MkdirAll(f.path("staging"), 0o755))
			must(t, os.WriteFile(f.path("staging/.netrc"), []byte("machine x"), 0o600))
			must(t, os.Rename(f.path("staging"), f.path("home/v")))
		}, false},
		{"a link's target removed", "home/u/.ssh", func(t *testing.T, f *hiddenFixture) {
			must(t, os.Remove(f.path("vault")))
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newHiddenFixture(t)
			c := newHiddenCache()
			t.Cleanup(c.close)
			p := f.path(tc.p)
			checkKept(t, c, f, "before")
			if got := c.resolve(f.list); got.Absent[p] == tc.absent || !slices.Contains(got.Paths, p) {
				t.Fatalf("before the change %s is listed %v, absent %v", tc.p, slices.Contains(got.Paths, p), got.Absent[p])
			}
			tc.change(t, f)
			checkKept(t, c, f, "after the change")
			if got := c.resolve(f.list); got.Absent[p] != tc.absent {
				t.Fatalf("after the change %s is absent %v, want %v", tc.p, got.Absent[p], tc.absent)
			}
		})
	}
}

// TestHiddenCacheDropsOnAttributes: a directory on a protected path whose
// attributes change (it may have become unsearchable, which changes what
// lstat answers beneath it) drops the answer.
func TestHiddenCacheDropsOnAttributes(t *testing.T) {
	f := newHiddenFixture(t)
	c := newHiddenCache()
	t.Cleanup(c.close)
	checkKept(t, c, f, "before")
	must(t, os.Chmod(f.path("home/u/.config"), 0o700))
	// quiet is what resolve asks of the queued events.
	if c.quiet() {
		t.Fatal("a changed attribute of a directory on a protected path kept the answer")
	}
}

// TestHiddenCacheSeesMounts: a mount over a directory on a protected path
// (which changes no directory entry, so inotify says nothing) is seen by
// the mount table's digest.
func TestHiddenCacheSeesMounts(t *testing.T) {
	f := newHiddenFixture(t)
	c := newHiddenCache()
	t.Cleanup(c.close)
	checkKept(t, c, f, "before")
	// The mounted tmpfs holds a link where the vault's link was.
	if err := unix.Mount("tmpfs", f.path("home/u"), "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(f.path("home/u"), unix.MNT_DETACH) })
	must(t, os.Symlink(f.path("vault2"), f.path("home/u/.ssh")))
	after := checkFresh(t, c, f, "after the mount")
	if !slices.Contains(after, f.path("vault2")) {
		t.Fatalf("the link on the mount is not followed: %q", after)
	}
}

// TestHiddenCacheRefusesUnwatchable: a list that reads a directory on a
// file system inotify cannot vouch for (procfs here) is resolved anew by
// every command, and so is a list with an entry that is not clean.
func TestHiddenCacheRefusesUnwatchable(t *testing.T) {
	for _, list := range [][]string{
		{"/proc/self/ironvise-no-such-file"},
		{"/tmp/../tmp/x"},
	} {
		c := newHiddenCache()
		got := c.resolve(list)
		if want := resolveHidden(list); !sameHidden(got, want) {
			t.Fatalf("%q: got %+v, want %+v", list, got, want)
		}
		if c.fd >= 0 || c.why == "" {
			t.Fatalf("%q: the answer was kept (fd %d, why %q)", list, c.fd, c.why)
		}
		if strings.HasPrefix(list[0], "/proc") && !strings.Contains(c.why, "file system") {
			t.Fatalf("%q: reason %q does not name the file system", list, c.why)
		}
		c.close()
	}
}

// TestHiddenCacheDoesNotRetryTheUnwatchable: once a list proved
// unwatchable, later commands resolve it without trying again (no
// inotify descriptor, no statfs) until the mount table changes; then it
// is tried again.
func TestHiddenCacheDoesNotRetryTheUnwatchable(t *testing.T) {
	list := []string{"/proc/self/ironvise-no-such-file"}
	c := newHiddenCache()
	t.Cleanup(c.close)
	c.resolve(list)
	if !c.off {
		t.Fatalf("a list on procfs was not marked unwatchable (why %q)", c.why)
	}
	c.why = "" // an attempt would set it again
	if got, want := c.resolve(list), resolveHidden(list); !sameHidden(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if c.why != "" {
		t.Fatalf("the unwatchable list was tried again with the mount table unchanged: %s", c.why)
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	c.resolve(list)
	if c.why == "" || !c.off {
		t.Fatalf("after a mount the list was not tried again (why %q, off %v)", c.why, c.off)
	}
}

// TestHiddenCacheClosed: a closed tier's cache keeps nothing.
func TestHiddenCacheClosed(t *testing.T) {
	f := newHiddenFixture(t)
	c := newHiddenCache()
	c.close()
	checkFresh(t, c, f, "after close")
	if c.fd >= 0 {
		t.Fatal("a closed cache opened a watch")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMasksLeaveOutTheAbsent: the launcher is sent the protected paths
// that exist and not those that resolving the list for the command found
// absent — from the tier's kept answer and from a request's own list
// alike — and a protected file created between two commands is masked
// for the second: the command reads nothing of it.
func TestMasksLeaveOutTheAbsent(t *testing.T) {
	fx := newFixture(t)
	present, absent, under := filepath.Join(fx.ws, ".env"), filepath.Join(fx.ws, ".aws"), filepath.Join(fx.ws, ".config", "gh", "hosts.yml")
	must(t, os.WriteFile(present, []byte("TOKEN=present"), 0o644))
	tier := newTestTier(t, sandbox.Options{Hidden: []string{present, absent, under}})
	masks, err := tier.masks(fx.ws, nil)
	must(t, err)
	if !slices.Contains(masks, present) || slices.Contains(masks, absent) || slices.Contains(masks, under) {
		t.Fatalf("the launcher's list %q: want %s and neither %s nor %s", masks, present, absent, under)
	}
	reqAbsent := filepath.Join(fx.ws, "request-only")
	masks, err = tier.masks(fx.ws, []string{reqAbsent})
	must(t, err)
	if !slices.Contains(masks, present) || slices.Contains(masks, reqAbsent) || slices.Contains(masks, absent) {
		t.Fatalf("with a request's list the launcher's list is %q: want %s and neither %s nor %s", masks, present, reqAbsent, absent)
	}

	r := run(t, tier, fx, "cat .env; cat .aws; echo done")
	noLeak(t, r, "TOKEN=present")
	contains(t, r, "done")
	text := "aws_secret_access_key=" + fx.secretText
	must(t, os.WriteFile(absent, []byte(text), 0o644))
	masks, err = tier.masks(fx.ws, nil)
	must(t, err)
	if !slices.Contains(masks, absent) {
		t.Fatalf("%s was created and is not in the launcher's list: %q", absent, masks)
	}
	r = run(t, tier, fx, "cat .aws; echo done")
	noLeak(t, r, fx.secretText)
	contains(t, r, "done")
}
