package overlay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const step1 = `
echo new > new.txt
sed -i s/two/TWO/ a.txt
rm del.txt
mv mv-src.txt moved.txt
mv olddir newdir
chmod 755 script.sh
ln -s a.txt link
mkdir -p build/out && echo obj > build/out/x.o
chmod 555 build/out
rm -r gone`

const step2 = `
echo again >> new.txt
rm -r sub
mkdir sub && echo fresh > sub/new
rm link && ln -s new.txt link
rm build/out/x.o 2>/dev/null || true`

// twoSteps runs step1 and step2 for session and returns their records.
func twoSteps(t *testing.T, s *Store, ws, session string) []ChangeSet {
	t.Helper()
	return []ChangeSet{step(t, s, ws, session, 1, step1), step(t, s, ws, session, 2, step2)}
}

// TestApplySuccess applies two stacked steps and checks the real
// workspace equals the merged view the commands saw.
func TestApplySuccess(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	rec := twoSteps(t, s, ws, "s")
	want := mergedSnapshot(t, s, ws, "s", 0)
	res, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Applied || len(res.Steps) != 2 || len(res.Changes) == 0 {
		t.Errorf("result: %+v", res)
	}
	if d := diffSnap(want, snapshot(t, ws)); len(d) > 0 {
		t.Errorf("workspace differs from the merged view:\n%s", strings.Join(d, "\n"))
	}
	if leftovers, _ := filepath.Glob(filepath.Join(ws, "*", ".ironvise-*")); len(leftovers) > 0 {
		t.Errorf("staging files left: %v", leftovers)
	}
}

// TestApplyThroughAndDryRun applies only the first step, after a dry
// run that must change nothing.
func TestApplyThroughAndDryRun(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	rec := twoSteps(t, s, ws, "s")
	before := snapshot(t, ws)
	res, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied || !res.DryRun || len(res.Changes) == 0 {
		t.Errorf("dry run result: %+v", res)
	}
	if d := diffSnap(before, snapshot(t, ws)); len(d) > 0 {
		t.Fatalf("dry run changed the workspace:\n%s", strings.Join(d, "\n"))
	}
	want := mergedSnapshot(t, s, ws, "s", 1)
	res, err = s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec, Through: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 1 || res.Steps[0] != 1 {
		t.Errorf("steps %v; want [1]", res.Steps)
	}
	if d := diffSnap(want, snapshot(t, ws)); len(d) > 0 {
		t.Errorf("workspace differs from the view through step 1:\n%s", strings.Join(d, "\n"))
	}
}

// TestApplyConflict changes files on the host after the steps: Apply
// refuses, names them, and writes nothing.
func TestApplyConflict(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	rec := twoSteps(t, s, ws, "s")
	writeTree(t, ws, map[string]string{"new.txt": "host made this\n"})
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("edited on the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, ws)
	_, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec})
	r, ok := isRefusal(err, ErrConflict)
	if !ok {
		t.Fatalf("got %v; want a conflict", err)
	}
	var got []string
	for _, p := range r.Problems {
		got = append(got, p.Path)
	}
	if strings.Join(got, " ") != "a.txt new.txt" {
		t.Errorf("conflicts %v; want a.txt new.txt", got)
	}
	if !strings.Contains(err.Error(), "a.txt (changed on the host") || !strings.Contains(err.Error(), "new.txt (added by the session but now exists on the host)") {
		t.Errorf("message: %v", err)
	}
	if d := diffSnap(before, snapshot(t, ws)); len(d) > 0 {
		t.Errorf("a refused apply changed the workspace:\n%s", strings.Join(d, "\n"))
	}
}

// TestApplyTamper edits, adds and removes files in the upper layers
// after the change sets were recorded: Apply refuses and names them.
func TestApplyTamper(t *testing.T) {
	requireOverlay(t)
	cases := []struct {
		name string
		edit func(t *testing.T, up1, up2 string)
		want string
	}{
		{"edit", func(t *testing.T, up1, _ string) {
			writeTree(t, up1, nil)
			if err := os.WriteFile(filepath.Join(up1, "a.txt"), []byte("one\nTWO\nrm -rf ~\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "a.txt"},
		{"add", func(t *testing.T, _, up2 string) {
			writeTree(t, up2, map[string]string{".git/hooks/post-checkout": "evil"})
		}, ".git/hooks/post-checkout"},
		{"remove whiteout", func(t *testing.T, up1, _ string) {
			if err := os.Remove(filepath.Join(up1, "del.txt")); err != nil {
				t.Fatal(err)
			}
		}, "del.txt"},
		{"chmod", func(t *testing.T, up1, _ string) {
			if err := os.Chmod(filepath.Join(up1, "new.txt"), 0o4755); err != nil {
				t.Fatal(err)
			}
		}, "new.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := baseWorkspace(t)
			s := newStore(t)
			rec := twoSteps(t, s, ws, "s")
			ls, _ := s.Layers("s")
			tc.edit(t, ls[0].Upper, ls[1].Upper)
			before := snapshot(t, ws)
			_, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec})
			r, ok := isRefusal(err, ErrTampered)
			if !ok {
				t.Fatalf("got %v; want tampering", err)
			}
			if r.Problems[0].Path != tc.want {
				t.Errorf("first problem %+v; want path %s (all: %v)", r.Problems[0], tc.want, err)
			}
			if d := diffSnap(before, snapshot(t, ws)); len(d) > 0 {
				t.Errorf("a refused apply changed the workspace:\n%s", strings.Join(d, "\n"))
			}
		})
	}
}

// TestApplyRecordMismatch refuses records that do not match the layers
// one to one, and recorded paths that would leave the workspace.
func TestApplyRecordMismatch(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	rec := twoSteps(t, s, ws, "s")
	if _, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec[:1]}); !errors.Is(err, ErrTampered) {
		t.Errorf("a layer without a record: got %v; want tampering", err)
	}
	extra := append(append([]ChangeSet{}, rec...), ChangeSet{Step: 3, Changes: []Change{{Path: "x", Op: OpAdded, Kind: KindFile}}})
	if _, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: extra}); !errors.Is(err, ErrTampered) {
		t.Errorf("a record without a layer: got %v; want tampering", err)
	}
	for _, bad := range []string{"../escape", "/etc/passwd", "a/../../b", "a//b", ""} {
		evil := append([]ChangeSet{}, rec...)
		evil[0].Changes = append(append([]Change{}, rec[0].Changes...), Change{Path: bad, Op: OpAdded, Kind: KindFile})
		if _, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: evil}); err == nil || !strings.Contains(err.Error(), "recorded path") {
			t.Errorf("recorded path %q: got %v; want refused", bad, err)
		}
	}
}

// TestApplySymlinkedParent refuses to write through a parent directory
// the host replaced with a symlink pointing out of the workspace.
func TestApplySymlinkedParent(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	rec := []ChangeSet{step(t, s, ws, "s", 1, `echo pwned > sub/evil`)}
	outside := t.TempDir()
	if err := os.RemoveAll(filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec})
	if _, ok := isRefusal(err, ErrConflict); !ok || !strings.Contains(err.Error(), "sub/evil (its parent sub is not a directory") {
		t.Errorf("got %v; want a conflict on sub/evil", err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "evil")); err == nil {
		t.Error("apply wrote outside the workspace")
	}
}

// TestApplyRaceSymlinkedParent: a host process that swaps a checked
// directory for a symlink to elsewhere between Apply's checks and its
// writes does not get a file written outside the workspace: the writes
// resolve beneath the workspace, so the swap fails the apply, and what was
// done is undone.
func TestApplyRaceSymlinkedParent(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	rec := []ChangeSet{step(t, s, ws, "s", 1, `echo pwned > sub/evil && sed -i s/one/ONE/ a.txt`)}
	outside := t.TempDir()
	before := snapshot(t, ws)
	beforeWrite = func() {
		// The checks saw sub as a directory; now it leads outside.
		if err := os.Rename(filepath.Join(ws, "sub"), filepath.Join(outside, "moved-sub")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, filepath.Join(ws, "sub")); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { beforeWrite = nil })
	_, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec})
	if err == nil {
		t.Fatal("the apply succeeded through a parent swapped for a symlink out of the workspace")
	}
	if _, err := os.Lstat(filepath.Join(outside, "evil")); err == nil {
		t.Fatal("apply wrote outside the workspace")
	}
	// Undo the swap, then the workspace is as before the apply.
	os.Remove(filepath.Join(ws, "sub"))
	if err := os.Rename(filepath.Join(outside, "moved-sub"), filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	if d := diffSnap(before, snapshot(t, ws)); len(d) > 0 {
		t.Errorf("the failed apply left changes: %v", d)
	}
}

// TestApplyRollback makes one target directory read-only (a read-only
// bind mount: root ignores permission bits) so a write fails midway;
// everything done before must be undone.
func TestApplyRollback(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	rec := []ChangeSet{step(t, s, ws, "s", 1, `
sed -i s/one/ONE/ a.txt
rm del.txt
chmod 700 script.sh
mkdir newdir && echo n > newdir/n
echo late > sub/late.txt`)}
	before := snapshot(t, ws)
	sub := filepath.Join(ws, "sub")
	if err := unix.Mount(sub, sub, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(sub, 0) })
	if err := unix.Mount("", sub, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	_, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec})
	if err == nil || !strings.Contains(err.Error(), "sub/late.txt") {
		t.Fatalf("got %v; want a failure naming sub/late.txt", err)
	}
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrTampered) {
		t.Errorf("a write failure is neither a conflict nor tampering: %v", err)
	}
	if d := diffSnap(before, snapshot(t, ws)); len(d) > 0 {
		t.Errorf("rollback left changes:\n%s", strings.Join(d, "\n"))
	}
	// Once the directory is writable again the same apply succeeds.
	if err := unix.Unmount(sub, 0); err != nil {
		t.Fatal(err)
	}
	want := mergedSnapshot(t, s, ws, "s", 0)
	if _, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec}); err != nil {
		t.Fatal(err)
	}
	if d := diffSnap(want, snapshot(t, ws)); len(d) > 0 {
		t.Errorf("workspace differs from the merged view:\n%s", strings.Join(d, "\n"))
	}
}

// TestTwoSessionsApart runs two sessions on one workspace: each sees
// and applies only its own layers.
func TestTwoSessionsApart(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	recA := []ChangeSet{step(t, s, ws, "A", 1, `echo a > only-a.txt`)}
	recB := []ChangeSet{step(t, s, ws, "B", 1, `test ! -e only-a.txt; echo b > only-b.txt; sed -i s/three/3/ a.txt`)}
	accA, err := s.Accumulated(ws, "A", 0, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(accA.Changes) != 1 || accA.Changes[0].Path != "only-a.txt" {
		t.Errorf("session A sees %+v", accA.Changes)
	}
	if _, err := s.Apply(ApplyOptions{Workspace: ws, Session: "A", Recorded: recB}); !errors.Is(err, ErrTampered) {
		t.Errorf("B's record against A's layers: got %v; want refused", err)
	}
	if _, err := s.Apply(ApplyOptions{Workspace: ws, Session: "A", Recorded: recA}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "only-b.txt")); err == nil {
		t.Error("applying A wrote B's file")
	}
	if _, err := s.Apply(ApplyOptions{Workspace: ws, Session: "B", Recorded: recB}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
	if string(b) != "one\ntwo\n3\n" {
		t.Errorf("a.txt = %q", b)
	}
}

// TestApplyRefusesSetuid: an agent that marks a file setuid must not get
// a setuid program on the host from an approval.
func TestApplyRefusesSetuid(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	rec := []ChangeSet{step(t, s, ws, "s", 1, `chmod 4755 script.sh; cp /bin/true t; chmod 2755 t; echo ok > fine.txt`)}
	before := snapshot(t, ws)
	_, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec})
	r, ok := isRefusal(err, ErrUnsafe)
	if !ok || len(r.Problems) != 2 || r.Problems[0].Path != "script.sh" || r.Problems[1].Path != "t" {
		t.Fatalf("got %v; want script.sh and t refused as unsafe", err)
	}
	if d := diffSnap(before, snapshot(t, ws)); len(d) > 0 {
		t.Errorf("a refused apply changed the workspace:\n%s", strings.Join(d, "\n"))
	}
}

// TestApplyInTwoParts applies step 1, drops its layer, then applies step
// 2 on the workspace that now holds step 1: the end result is the
// merged view of both.
func TestApplyInTwoParts(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	rec := twoSteps(t, s, ws, "s")
	want := mergedSnapshot(t, s, ws, "s", 0)
	if _, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec, Through: 1}); err != nil {
		t.Fatal(err)
	}
	// Applied again, step 1 conflicts: its bases are gone from the host.
	if _, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec, Through: 1}); !errors.Is(err, ErrConflict) {
		t.Errorf("re-applying step 1: got %v; want a conflict", err)
	}
	if err := s.DropThrough("s", 1); err != nil {
		t.Fatal(err)
	}
	if ls, _ := s.Layers("s"); len(ls) != 1 || ls[0].Step != 2 {
		t.Fatalf("layers after the drop: %+v", ls)
	}
	if _, err := s.Apply(ApplyOptions{Workspace: ws, Session: "s", Recorded: rec[1:]}); err != nil {
		t.Fatal(err)
	}
	if d := diffSnap(want, snapshot(t, ws)); len(d) > 0 {
		t.Errorf("workspace differs from the merged view:\n%s", strings.Join(d, "\n"))
	}
}
