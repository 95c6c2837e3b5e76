package container

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
)

func TestPlanMasks(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "home")
	for _, d := range []string{".ssh", ".local/share/ironvise/keys", "project", ".config/gcloud"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".netrc", ".ssh/id_ed25519"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".ssh", filepath.Join(ws, "keys")); err != nil {
		t.Fatal(err)
	}
	hidden := sandbox.HiddenPaths([]string{
		filepath.Join(ws, ".ssh"), filepath.Join(ws, ".ssh", "id_ed25519"), // nested: the outer mask suffices
		filepath.Join(ws, ".netrc"), filepath.Join(ws, ".local/share/ironvise"),
		filepath.Join(ws, ".aws"),    // missing: nothing to cover
		filepath.Join(ws, "keys"),    // a symlink: its target is covered
		filepath.Join(base, "other"), // outside the workspace: never visible
		"relative/ignored",
	}, []string{filepath.Join(ws, ".config", "gcloud")}) // the request's own
	plan, err := planMasks(ws, hidden)
	if err != nil {
		t.Fatal(err)
	}
	wantDirs := []string{"/workspace/.config/gcloud", "/workspace/.local/share/ironvise", "/workspace/.ssh"}
	if !slices.Equal(plan.dirs, wantDirs) || !slices.Equal(plan.files, []string{"/workspace/.netrc"}) {
		t.Fatalf("dirs %q files %q; want %q and [/workspace/.netrc]", plan.dirs, plan.files, wantDirs)
	}
	priv := t.TempDir()
	masks, err := plan.mounts(priv)
	if err != nil || len(masks) != 4 {
		t.Fatalf("mounts: %v %v", masks, err)
	}
	for _, m := range masks {
		fi, err := os.Stat(m.source)
		if err != nil || fi.Mode().Perm()&0o222 != 0 {
			t.Fatalf("mask source %s: %v %v; want a read-only empty source", m.source, fi, err)
		}
		if fi.IsDir() != slices.Contains(wantDirs, m.target) {
			t.Fatalf("%s covered by %s", m.target, m.source)
		}
	}

	// A workspace that is, or lies inside, a protected path is refused.
	for _, bad := range []struct {
		ws     string
		hidden []string
	}{{ws, append(slices.Clone(hidden), ws)}, {filepath.Join(ws, ".ssh"), hidden}} {
		if _, err := planMasks(bad.ws, bad.hidden); err == nil || !strings.Contains(err.Error(), "lies inside the protected path") {
			t.Errorf("workspace %s: got %v; want a refusal", bad.ws, err)
		}
	}
	// A name that a --mount value cannot carry fails closed.
	odd := filepath.Join(ws, "a,b")
	if err := os.Mkdir(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := planMasks(ws, []string{odd}); err == nil || !strings.Contains(err.Error(), "cannot be masked") {
		t.Errorf("comma in a protected name: got %v; want a refusal", err)
	}
}
