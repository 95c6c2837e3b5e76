//go:build linux

package launch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// countingLstat is os.Lstat counting its calls by name.
type countingLstat struct{ calls map[string]int }

func (c *countingLstat) lstat(p string) (os.FileInfo, error) {
	c.calls[p]++
	return os.Lstat(p)
}

func (c *countingLstat) total() int {
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

// hostLike builds, under a temporary root, homes as the tier lists them:
// one with a few stores, one without any, one that is a file, plus
// symlinks (to a store, dangling, and a symlinked parent).
func hostLike(t *testing.T) (root string, hide []string) {
	t.Helper()
	root = t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := func(p string) {
		mk(filepath.Dir(p))
		if err := os.WriteFile(filepath.Join(root, p), []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	file("home/alice/.aws/credentials")
	mk("home/alice/.ssh")
	file("home/alice/.config/gh/hosts.yml")
	mk("home/alice/.var")
	file("home/alice/.netrc")
	mk("home/bob")
	file("srv/notadir")
	link("../../srv/real", "home/alice/.kube")
	mk("srv/real")
	link("/nonexistent/target", "home/alice/.npmrc")
	link(filepath.Join(root, "home/alice/.config"), "home/carol")
	stores := []string{".aws", ".aws/credentials", ".azure", ".config/BraveSoftware", ".config/chromium",
		".config/gcloud", ".config/gh", ".config/gh/hosts.yml", ".config/opera", ".kube", ".netrc", ".npmrc",
		".ssh", ".ssh/id_ed25519", ".var/app/com.google.Chrome", ".var/app/org.mozilla.firefox",
		".var/app/org.chromium.Chromium", "snap/firefox", "snap/chromium"}
	for _, home := range []string{"home/alice", "home/bob", "home/dave", "srv/notadir", "home/carol"} {
		for _, s := range stores {
			hide = append(hide, filepath.Join(root, home, s))
		}
	}
	// Names the memo must never shortcut: ".." out of a directory, and
	// through a missing one.
	hide = append(hide,
		root+"/home/alice/.ssh/../.netrc",
		root+"/home/dave/.config/../../alice/.netrc",
		root+"//home/alice/.netrc",
		root+"/home/alice/.netrc/",
	)
	slices.Sort(hide)
	return root, hide
}

// TestMaskScanFindsWhatLstatFinds holds the scan's answers equal to an
// lstat of every path, while it asks the kernel about fewer names.
func TestMaskScanFindsWhatLstatFinds(t *testing.T) {
	_, hide := hostLike(t)
	c := &countingLstat{calls: map[string]int{}}
	scan := newMaskScan(c.lstat, len(hide))
	for _, p := range hide {
		fi, ok := scan.find(p)
		want, err := os.Lstat(p)
		if ok != (err == nil) {
			t.Errorf("find(%s) = %v, lstat says exists=%v (%v)", p, ok, err == nil, err)
			continue
		}
		if ok && (fi.Mode() != want.Mode() || !os.SameFile(fi, want)) {
			t.Errorf("find(%s) = %v, lstat %v", p, fi.Mode(), want.Mode())
		}
	}
	if c.total() >= len(hide) {
		t.Errorf("the scan asked about %d names for %d paths; want fewer", c.total(), len(hide))
	}
	for p, n := range c.calls {
		if n > 1 {
			t.Errorf("asked about %s %d times", p, n)
		}
	}
	t.Logf("%d paths, %d lstat calls", len(hide), c.total())
}

// TestMaskScanAfterMask: once a directory is covered by an empty tmpfs,
// the clean names under it need no lstat (nothing is there to mask); a
// name that climbs out of it with ".." is still asked about.
func TestMaskScanAfterMask(t *testing.T) {
	root, _ := hostLike(t)
	c := &countingLstat{calls: map[string]int{}}
	scan := newMaskScan(c.lstat, 4)
	aws := root + "/home/alice/.aws"
	if _, ok := scan.find(aws); !ok {
		t.Fatalf("%s not found", aws)
	}
	scan.masked(aws)
	if _, ok := scan.find(aws + "/credentials"); ok {
		t.Errorf("a path under a masked directory was reported present")
	}
	if c.calls[aws+"/credentials"] != 0 {
		t.Errorf("asked the kernel about a path under a masked directory")
	}
	up := aws + "/../.netrc"
	if _, ok := scan.find(up); !ok {
		t.Errorf("%s exists and must be found (it climbs out of the masked directory)", up)
	}
	if c.calls[up] != 1 {
		t.Errorf("%s asked %d times, want 1", up, c.calls[up])
	}
}

// TestMaskScanUnreadableParent: when a parent cannot be examined (not
// ENOENT or ENOTDIR), every path under it is still asked about.
func TestMaskScanUnreadableParent(t *testing.T) {
	calls := 0
	eacces := &os.PathError{Op: "lstat", Err: os.ErrPermission}
	scan := newMaskScan(func(p string) (os.FileInfo, error) {
		calls++
		if p == "/locked" {
			return nil, eacces
		}
		return nil, &os.PathError{Op: "lstat", Path: p, Err: errENOENT}
	}, 3)
	for _, p := range []string{"/locked/a/x", "/locked/a/y", "/locked/b"} {
		scan.find(p)
	}
	// /locked/a/x, then /locked/a (missing), then /locked (EACCES: stop);
	// /locked/a/y is under the missing /locked/a; /locked/b is asked.
	if calls != 4 {
		t.Errorf("%d lstat calls, want 4", calls)
	}
	if !scan.underEmpty("/locked/a/z") || scan.underEmpty("/locked/c") {
		t.Errorf("memo: /locked/a empty=%v, /locked empty=%v", scan.underEmpty("/locked/a/z"), scan.underEmpty("/locked/c"))
	}
}

func TestCleanAbsAndParentDir(t *testing.T) {
	for p, want := range map[string]bool{
		"/a/b": true, "/a": true, "/": false, "": false, "a/b": false, "/a//b": false,
		"/a/./b": false, "/a/../b": false, "/a/b/": false, "/a/..": false, "/a/.b": true, "/..a": true,
	} {
		if got := cleanAbs(p); got != want {
			t.Errorf("cleanAbs(%q) = %v, want %v", p, got, want)
		}
	}
	for p, want := range map[string]string{"/a/b": "/a", "/a": "/", "a": "", "/": "/"} {
		if got := parentDir(p); got != want {
			t.Errorf("parentDir(%q) = %q, want %q", p, got, want)
		}
	}
}

var errENOENT error = unix.ENOENT
