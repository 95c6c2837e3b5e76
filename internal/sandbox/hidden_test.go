package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/ironvise/ironvise/internal/secretpaths"
)

// hiddenPathsUnshared is HiddenPaths before its walks shared a Memo:
// filepath.EvalSymlinks on every path.
func hiddenPathsUnshared(lists ...[]string) []string {
	return hiddenPaths(filepath.EvalSymlinks, lists...)
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
