package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// requireOverlay skips unless the test can mount overlayfs (root, and a
// kernel with overlay support).
func requireOverlay(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting overlayfs needs root")
	}
	dir := t.TempDir()
	for _, d := range []string{"l", "u", "w", "m"} {
		mustMkdir(t, filepath.Join(dir, d))
	}
	if err := mountOverlay(filepath.Join(dir, "m"), []string{filepath.Join(dir, "l")}, filepath.Join(dir, "u"), filepath.Join(dir, "w"), ""); err != nil {
		t.Skipf("overlayfs unavailable: %v", err)
	}
	_ = unix.Unmount(filepath.Join(dir, "m"), 0)
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// mountOverlay mounts lowers (top first) with upper and work at m, with
// the options the sandbox uses (no redirect_dir, no metacopy).
func mountOverlay(m string, lowers []string, upper, work, extra string) error {
	opts := "lowerdir=" + strings.Join(lowers, ":") + ",upperdir=" + upper + ",workdir=" + work
	if extra != "" {
		// userxattr implies redirect_dir=nofollow and no metacopy, and
		// refuses them as options.
		opts += "," + extra
	} else {
		opts += ",redirect_dir=off,metacopy=off"
	}
	return unix.Mount("overlay", m, "overlay", 0, opts)
}

// runStep mounts the pending layer of the store over ws, runs script in
// the merged dir with sh, and unmounts.
func runStep(t *testing.T, ws string, p *Pending, script string) {
	t.Helper()
	o := p.Overlay()
	m := filepath.Join(t.TempDir(), "merged")
	mustMkdir(t, m)
	lowers := append(append([]string{}, o.Layers...), ws)
	if err := mountOverlay(m, lowers, o.Upper, o.Work, ""); err != nil {
		t.Fatalf("mount overlay: %v", err)
	}
	defer func() {
		if err := unix.Unmount(m, 0); err != nil {
			t.Fatalf("unmount: %v", err)
		}
	}()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = m
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("step script: %v\n%s", err, out)
	}
}

// step begins, runs, computes and accepts one step; it returns the
// change set as recorded.
func step(t *testing.T, s *Store, ws, session string, n int64, script string) ChangeSet {
	t.Helper()
	p, err := s.Begin(session, n)
	if err != nil {
		t.Fatal(err)
	}
	runStep(t, ws, p, script)
	cs, err := p.Changes(ws, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Accept(); err != nil {
		t.Fatal(err)
	}
	return *cs
}

// mergedSnapshot mounts the session's accepted layers (through step,
// 0 all) read-only over ws and snapshots the merged tree.
func mergedSnapshot(t *testing.T, s *Store, ws, session string, through int64) map[string]string {
	t.Helper()
	layers, err := s.Layers(session)
	if err != nil {
		t.Fatal(err)
	}
	var lowers []string
	for _, l := range layers {
		if through > 0 && l.Step > through {
			break
		}
		lowers = append([]string{l.Upper}, lowers...)
	}
	lowers = append(lowers, ws)
	if len(lowers) == 1 {
		return snapshot(t, ws)
	}
	m := filepath.Join(t.TempDir(), "view")
	mustMkdir(t, m)
	// Two or more lower dirs and no upper: a read-only overlay.
	if err := unix.Mount("overlay", m, "overlay", unix.MS_RDONLY, "lowerdir="+strings.Join(lowers, ":")+",redirect_dir=off,metacopy=off"); err != nil {
		t.Fatalf("mount read-only overlay: %v", err)
	}
	defer func() { _ = unix.Unmount(m, 0) }()
	return snapshot(t, m)
}

// snapshot describes every entry of a tree: kind, mode and content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		r, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			tg, _ := os.Readlink(p)
			out[r] = "symlink " + tg
		case fi.IsDir():
			out[r] = "dir " + fi.Mode().Perm().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			out[r] = "file " + fi.Mode().String() + " " + hex.EncodeToString(h[:8])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffSnap(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k+": "+v+" vs "+b[k])
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k+": missing vs "+v)
		}
	}
	sort.Strings(out)
	return out
}

// writeTree creates files: a value "->x" makes a symlink to x, a key
// ending in "/" a directory.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			mustMkdir(t, full)
			continue
		}
		mustMkdir(t, filepath.Dir(full))
		if tg, ok := strings.CutPrefix(c, "->"); ok {
			if err := os.Symlink(tg, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func byPath(cs ChangeSet) map[string]Change {
	m := map[string]Change{}
	for _, c := range cs.Changes {
		m[c.Path] = c
	}
	return m
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := NewStore(filepath.Join(t.TempDir(), "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func isRefusal(err error, kind error) (*RefusalError, bool) {
	var r *RefusalError
	if errors.As(err, &r) && errors.Is(err, kind) {
		return r, true
	}
	return nil, false
}

var execCommand = exec.Command

func unmount(t *testing.T, m string) {
	t.Helper()
	if err := unix.Unmount(m, 0); err != nil {
		t.Fatal(err)
	}
}

func setxattr(p, name, val string) error {
	return unix.Lsetxattr(p, name, []byte(val), 0)
}

// The two views below are the tests' own: IronVise records each step's
// change set as it is made (Pending.Changes) and never recomputes them
// this way.

// StepChanges computes the change set of an accepted (or pending) layer
// of session against the accepted layers below it.
func (s *Store) StepChanges(workspace, session string, step int64, lim Limits) (*ChangeSet, error) {
	layers, err := s.Layers(session)
	if err != nil {
		return nil, err
	}
	var below []string
	for _, l := range layers {
		if l.Step == step {
			cs, err := Compute(workspace, below, l.Upper, lim)
			if cs != nil {
				cs.Step = step
			}
			return cs, err
		}
		below = append([]string{l.Upper}, below...)
	}
	return nil, fmt.Errorf("overlay: session %q has no accepted layer for step %d", session, step)
}

// Accumulated returns the change set of the session's accepted layers up
// to and including step through (0: all) against the real workspace.
func (s *Store) Accumulated(workspace, session string, through int64, lim Limits) (*ChangeSet, error) {
	layers, err := s.Layers(session)
	if err != nil {
		return nil, err
	}
	var uppers []string
	var last int64
	for _, l := range layers {
		if through > 0 && l.Step > through {
			break
		}
		uppers = append([]string{l.Upper}, uppers...)
		last = l.Step
	}
	old, err := newView(workspace, nil)
	if err != nil {
		return nil, err
	}
	cur, err := newView(workspace, uppers)
	if err != nil {
		return nil, err
	}
	cs, err := compare(old, cur, uppers, lim)
	if cs != nil {
		cs.Step = last
	}
	return cs, err
}
