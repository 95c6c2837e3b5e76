package sandbox

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/ironvise/ironvise/internal/secretpaths"
)

// hiddenPathsUnshared is HiddenPaths before its walks shared a Memo:
// filepath.EvalSymlinks on every path.
func hiddenPathsUnshared(lists ...[]string) []string {
	return hiddenPaths(filepath.EvalSymlinks, lists...).Paths
}

// hostHidden is this host's protected list as a tier receives it
// (secretpaths.Compute with the command line's sources), plus paths no
// caller cleaned.
func hostHidden(tb testing.TB) []string {
	home, err := os.UserHomeDir()
	if err != nil {
		tb.Skip("no home directory")
	}
	l, err := secretpaths.Compute(secretpaths.Sources{DataDir: filepath.Join(home, ".local", "share", "ironvise"), Home: home})
	if err != nil {
		tb.Fatal(err)
	}
	return l.Paths
}

// TestHiddenPathsMatchesUnshared: the same answer as resolving every path
// on its own, on this host's list and on links made for the test (a link
// to a parent, a dangling one, a loop, a link to "file/", unclean and
// relative entries).
func TestHiddenPathsMatchesUnshared(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "home/u/.config/gh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"home/u/.ssh", "../../vault"}, {"home/u/up", ".."}, {"home/u/.aws", "nowhere"},
		{"loop", "loop"}, {"home/u/.netrc", "../../f/"}, {"home/v", "u/.config"}} {
		if err := os.Symlink(l[1], filepath.Join(dir, l[0])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "vault"), 0o700); err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, p := range []string{"home/u/.ssh", "home/u/up/u/.ssh/x", "home/u/.aws", "loop/x", "home/u/.netrc",
		"home/v/gh", "home/v/gh/", "home/u//.config/./gh", "home/u/up/../u/.ssh"} {
		mine = append(mine, filepath.Join(dir, p), dir+"/"+p)
	}
	mine = append(mine, "relative/ignored", "")
	lists := [][]string{hostHidden(t), mine}
	want, got := hiddenPathsUnshared(lists...), HiddenPaths(lists...)
	if !slices.Equal(got, want) {
		t.Fatalf("HiddenPaths:\n%q\nresolving each path on its own:\n%q", got, want)
	}
	if !slices.Contains(got, filepath.Join(dir, "vault")) || !slices.Contains(got, filepath.Join(dir, "home/u/.config/gh")) {
		t.Fatalf("a link's target is missing: %q", got)
	}
}

// TestResolveHiddenAbsent: the entries reported absent are exactly the
// clean ones whose resolution meets a missing name or a non-directory,
// and for each of them lstat — what the tier would otherwise ask — finds
// nothing to mask: no file, or a link. A path that exists (a file, a
// directory, a link to either, the target of a listed link) is never
// among them, nor is an entry that is not clean, whose clean form is
// listed on its own.
func TestResolveHiddenAbsent(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"home/u/.config/gh", "vault"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"home/u/.netrc", "vault/key"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range [][2]string{{"home/u/.ssh", "../../vault"}, {"home/u/.aws", "nowhere"}, {"loop", "loop"}, {"home/w", "u"}} {
		if err := os.Symlink(l[1], filepath.Join(dir, l[0])); err != nil {
			t.Fatal(err)
		}
	}
	wantAbsent := map[string]bool{}
	var list []string
	for _, e := range []struct {
		p      string
		absent bool
	}{
		{"home/u/.config/gh", false}, {"home/u/.netrc", false}, {"home/u/.ssh", false}, {"home/u/.ssh/key", false},
		{"home/w/.netrc", false},      // through a link to the home
		{"home/u/.docker", true},      // missing
		{"home/v/.ssh", true},         // under a missing home
		{"home/u/.netrc/x", true},     // under a file (ENOTDIR)
		{"home/u/.aws", true},         // a dangling link: lstat finds the link
		{"home/w/.kube/config", true}, // missing, through a link
		{"loop/x", false},             // too many links: not known absent
		{"home/u//.docker/", false},   // not clean: its clean form is listed
	} {
		p := dir + "/" + e.p
		list = append(list, p)
		if e.absent {
			wantAbsent[p] = true
		}
	}
	h := ResolveHidden(secretpaths.OSLinks{}, list)
	if !maps.Equal(h.Absent, wantAbsent) {
		t.Fatalf("absent:\n%q\nwant\n%q", slices.Sorted(maps.Keys(h.Absent)), slices.Sorted(maps.Keys(wantAbsent)))
	}
	if want := HiddenPaths(list); !slices.Equal(h.Paths, want) {
		t.Fatalf("paths %q, HiddenPaths %q", h.Paths, want)
	}
	checkAbsentNeedNoMask(t, h)
	// This host's own list: every entry reported absent needs no mask,
	// and every clean entry that EvalSymlinks finds missing is reported.
	host := ResolveHidden(secretpaths.OSLinks{}, hostHidden(t))
	checkAbsentNeedNoMask(t, host)
	for _, p := range host.Paths {
		_, err := filepath.EvalSymlinks(p)
		if missing := errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR); missing != host.Absent[p] {
			t.Errorf("%s: reported absent %v, EvalSymlinks: %v", p, host.Absent[p], err)
		}
	}
}

// checkAbsentNeedNoMask fails when an entry reported absent is something
// a tier would mask: lstat must find nothing there, or a link.
func checkAbsentNeedNoMask(t *testing.T, h Hidden) {
	t.Helper()
	for p := range h.Absent {
		if !slices.Contains(h.Paths, p) {
			t.Errorf("%s is reported absent but is not an entry", p)
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s is reported absent but lstat finds a %v", p, fi.Mode())
		}
	}
}

// BenchmarkHiddenPaths: what a tier resolves when a command starts, on
// this host's list (the tier's own list, already holding the real
// locations), unshared against the Memo.
func BenchmarkHiddenPaths(b *testing.B) {
	list := HiddenPaths(hostHidden(b))
	for _, c := range []struct {
		name string
		f    func(...[]string) []string
	}{{"old", hiddenPathsUnshared}, {"new", HiddenPaths}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.f(list)
			}
		})
	}
}
