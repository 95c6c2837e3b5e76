package overlay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func baseWorkspace(t *testing.T) string {
	ws := filepath.Join(t.TempDir(), "ws")
	writeTree(t, ws, map[string]string{
		"a.txt":         "one\ntwo\nthree\n",
		"del.txt":       "delete me\n",
		"mv-src.txt":    "moving\n",
		"olddir/x":      "x content\n",
		"olddir/y":      "y content\n",
		"script.sh":     "#!/bin/sh\necho hi\n",
		"sub/keep.txt":  "keep\n",
		"bin.dat":       "bin\x00ary",
		"gone/deep/f.c": "int f;\n",
	})
	return ws
}

// TestComputeRealOverlay runs real commands in a mounted overlay and
// checks every change the layer holds.
func TestComputeRealOverlay(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	cs := step(t, s, ws, "s1", 1, `
echo new > new.txt
sed -i s/two/TWO/ a.txt
rm del.txt
mv mv-src.txt moved.txt
mv olddir newdir
chmod 755 script.sh
ln -s a.txt link
mkdir -p build/out && echo obj > build/out/x.o
printf 'bin\001ary' > bin.dat
rm -r gone
`)
	got := byPath(cs)
	want := map[string]struct {
		op   Op
		kind Kind
	}{
		"a.txt":         {OpModified, KindFile},
		"bin.dat":       {OpModified, KindFile},
		"build":         {OpAdded, KindDir},
		"build/out":     {OpAdded, KindDir},
		"build/out/x.o": {OpAdded, KindFile},
		"del.txt":       {OpDeleted, KindFile},
		"gone":          {OpDeleted, KindDir},
		"gone/deep":     {OpDeleted, KindDir},
		"gone/deep/f.c": {OpDeleted, KindFile},
		"link":          {OpAdded, KindSymlink},
		"moved.txt":     {OpRenamed, KindFile},
		"new.txt":       {OpAdded, KindFile},
		"newdir":        {OpAdded, KindDir},
		"newdir/x":      {OpRenamed, KindFile},
		"newdir/y":      {OpRenamed, KindFile},
		"olddir":        {OpDeleted, KindDir},
		"script.sh":     {OpMode, KindFile},
	}
	for p, w := range want {
		c, ok := got[p]
		if !ok {
			t.Errorf("%s: missing from the change set", p)
			continue
		}
		if c.Op != w.op || c.Kind != w.kind {
			t.Errorf("%s: got %s %s; want %s %s", p, c.Op, c.Kind, w.op, w.kind)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: unexpected change %+v", p, got[p])
		}
	}
	if c := got["a.txt"]; c.BaseSHA256 != sha("one\ntwo\nthree\n") || c.SHA256 != sha("one\nTWO\nthree\n") ||
		!strings.Contains(c.Diff, "-two\n+TWO\n") || !strings.HasPrefix(c.Diff, "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n") {
		t.Errorf("a.txt: %+v", c)
	}
	if c := got["bin.dat"]; c.Diff != "" || c.DiffSkipped != DiffBinary {
		t.Errorf("bin.dat: got diff %q skipped %q; want no diff, binary", c.Diff, c.DiffSkipped)
	}
	if c := got["moved.txt"]; c.From != "mv-src.txt" || c.BaseSHA256 != sha("moving\n") || c.SHA256 != c.BaseSHA256 {
		t.Errorf("moved.txt: %+v", c)
	}
	if c := got["newdir/x"]; c.From != "olddir/x" {
		t.Errorf("newdir/x: from %q; want olddir/x", c.From)
	}
	if c := got["script.sh"]; c.Mode != "0755" || c.BaseMode != "0644" {
		t.Errorf("script.sh: mode %s base %s; want 0755 base 0644", c.Mode, c.BaseMode)
	}
	if c := got["link"]; c.Target != "a.txt" {
		t.Errorf("link: target %q", c.Target)
	}
	if c := got["del.txt"]; c.BaseSHA256 != sha("delete me\n") || c.SHA256 != "" || c.Diff != "--- a/del.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-delete me\n" {
		t.Errorf("del.txt: %+v", c)
	}
	if c := got["new.txt"]; c.Size != 4 || c.Diff != "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,1 @@\n+new\n" {
		t.Errorf("new.txt: %+v", c)
	}
	// Sorted by path, and the same again: deterministic JSON.
	for i := 1; i < len(cs.Changes); i++ {
		if cs.Changes[i-1].Path >= cs.Changes[i].Path {
			t.Fatalf("not sorted: %s before %s", cs.Changes[i-1].Path, cs.Changes[i].Path)
		}
	}
	again, err := s.StepChanges(ws, "s1", 1, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	j1, _ := json.Marshal(cs)
	j2, _ := json.Marshal(again)
	if string(j1) != string(j2) {
		t.Errorf("recomputing gave a different change set:\n%s\n%s", j1, j2)
	}
	if !strings.Contains(string(j1), `"base_sha256"`) || !strings.Contains(string(j1), `"op":"renamed","from":"mv-src.txt"`) {
		t.Errorf("JSON lacks snake_case fields: %s", j1)
	}
}

// TestComputeStackedSteps checks that a second step is diffed against
// the first, and the accumulated set against the real workspace.
func TestComputeStackedSteps(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	step(t, s, ws, "s", 1, `echo v1 > gen.txt; mkdir tmpdir; echo t > tmpdir/t; echo changed > sub/keep.txt`)
	cs2 := step(t, s, ws, "s", 2, `echo v2 > gen.txt; rm -r tmpdir; rm a.txt; rm -r sub; mkdir sub; echo fresh > sub/new`)
	got := byPath(cs2)
	if c := got["gen.txt"]; c.Op != OpModified || c.BaseSHA256 != sha("v1\n") || c.SHA256 != sha("v2\n") {
		t.Errorf("gen.txt in step 2: %+v", c)
	}
	if c := got["tmpdir/t"]; c.Op != OpDeleted || c.BaseSHA256 != sha("t\n") {
		t.Errorf("tmpdir/t in step 2: %+v", c)
	}
	if c := got["a.txt"]; c.Op != OpDeleted {
		t.Errorf("a.txt in step 2: %+v", c)
	}
	// sub was made opaque: its old file is gone, the new one added.
	if c := got["sub/keep.txt"]; c.Op != OpDeleted || c.BaseSHA256 != sha("changed\n") {
		t.Errorf("sub/keep.txt in step 2: %+v", c)
	}
	if c := got["sub/new"]; c.Op != OpAdded {
		t.Errorf("sub/new in step 2: %+v", c)
	}
	if _, ok := got["sub"]; ok {
		t.Errorf("sub itself should not change: %+v", got["sub"])
	}
	acc, err := s.Accumulated(ws, "s", 0, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	ag := byPath(*acc)
	if c := ag["gen.txt"]; c.Op != OpAdded || c.SHA256 != sha("v2\n") {
		t.Errorf("accumulated gen.txt: %+v", c)
	}
	if _, ok := ag["tmpdir"]; ok {
		t.Errorf("accumulated: tmpdir was added and removed, got %+v", ag["tmpdir"])
	}
	if c := ag["sub/keep.txt"]; c.Op != OpDeleted || c.BaseSHA256 != sha("keep\n") {
		t.Errorf("accumulated sub/keep.txt: %+v", c)
	}
	if acc.Step != 2 {
		t.Errorf("accumulated step %d; want 2", acc.Step)
	}
	acc1, err := s.Accumulated(ws, "s", 1, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if c := byPath(*acc1)["gen.txt"]; c.SHA256 != sha("v1\n") {
		t.Errorf("accumulated through 1, gen.txt: %+v", c)
	}
}

// TestComputeXattrForms builds a layer by hand with the xattr forms of
// whiteouts and opaque directories (what userxattr mounts and nested
// overlays write) and checks they are read as deletions.
func TestComputeXattrForms(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("trusted xattrs need root")
	}
	ws := baseWorkspace(t)
	for _, ns := range []string{"user", "trusted"} {
		t.Run(ns, func(t *testing.T) {
			up := filepath.Join(t.TempDir(), "upper")
			writeTree(t, up, map[string]string{"del.txt": "", "olddir/new": "n\n"})
			if err := setxattr(filepath.Join(up, "del.txt"), ns+".overlay.whiteout", ""); err != nil {
				t.Skipf("%s xattrs unsupported here: %v", ns, err)
			}
			if err := setxattr(filepath.Join(up, "olddir"), ns+".overlay.opaque", "y"); err != nil {
				t.Fatal(err)
			}
			cs, err := Compute(ws, nil, up, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			got := byPath(*cs)
			for p, op := range map[string]Op{"del.txt": OpDeleted, "olddir/x": OpDeleted, "olddir/y": OpDeleted, "olddir/new": OpAdded} {
				if got[p].Op != op {
					t.Errorf("%s: got %q; want %q", p, got[p].Op, op)
				}
			}
			if len(got) != 4 {
				t.Errorf("got %d changes; want 4: %+v", len(got), cs.Changes)
			}
			// A metacopy file has no content of its own: refused.
			meta := filepath.Join(up, "a.txt")
			writeTree(t, up, map[string]string{"a.txt": ""})
			if err := setxattr(meta, ns+".overlay.metacopy", ""); err != nil {
				t.Fatal(err)
			}
			if _, err := Compute(ws, nil, up, DefaultLimits()); err == nil || !strings.Contains(err.Error(), "metacopy=off") {
				t.Errorf("metacopy layer: got %v; want an unsupported error", err)
			}
			if err := os.Remove(meta); err != nil {
				t.Fatal(err)
			}
			// A redirect would hide a rename's source: refused.
			if err := setxattr(filepath.Join(up, "olddir"), ns+".overlay.redirect", "/elsewhere"); err != nil {
				t.Fatal(err)
			}
			if _, err := Compute(ws, nil, up, DefaultLimits()); err == nil || !strings.Contains(err.Error(), "redirect_dir=off") {
				t.Errorf("redirect layer: got %v; want an unsupported error", err)
			}
		})
	}
}

// TestComputeUserxattrMount mounts with userxattr (the form an
// unprivileged user namespace uses) and checks the opaque directory and
// whiteouts it writes are read.
func TestComputeUserxattrMount(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	p, err := s.Begin("u", 1)
	if err != nil {
		t.Fatal(err)
	}
	o := p.Overlay()
	m := filepath.Join(t.TempDir(), "m")
	mustMkdir(t, m)
	if err := mountOverlay(m, []string{ws}, o.Upper, o.Work, "userxattr"); err != nil {
		t.Skipf("userxattr overlay unavailable: %v", err)
	}
	runIn(t, m, `rm del.txt; rm -r olddir; mkdir olddir; echo z > olddir/z`)
	unmount(t, m)
	cs, err := p.Changes(ws, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(*cs)
	for p, op := range map[string]Op{"del.txt": OpDeleted, "olddir/x": OpDeleted, "olddir/z": OpAdded} {
		if got[p].Op != op {
			t.Errorf("%s: got %q; want %q (%+v)", p, got[p].Op, op, cs.Changes)
		}
	}
}

// TestMatchForbidden checks forbidden globs against a real step.
func TestMatchForbidden(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	s := newStore(t)
	cs := step(t, s, ws, "f", 1, `mkdir -p .git/hooks .github/workflows deep/er
echo evil > .git/hooks/pre-commit
echo on: > .github/workflows/ci.yml
echo S=1 > .env
echo S=2 > deep/er/.env
echo fine > README
mv a.txt .github/a.txt`)
	bad, err := Match(&cs, []string{".git/hooks/**", ".github/**", ".env", "**/.env"})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range bad {
		paths = append(paths, f.Change.Path+"="+f.Glob)
	}
	want := ".env=.env .git/hooks=.git/hooks/** .git/hooks/pre-commit=.git/hooks/** .github=.github/** .github/a.txt=.github/** .github/workflows=.github/** .github/workflows/ci.yml=.github/** deep/er/.env=**/.env"
	if strings.Join(paths, " ") != want {
		t.Errorf("forbidden:\n got %s\nwant %s", strings.Join(paths, " "), want)
	}
	if _, err := Match(&cs, []string{"a/**b"}); err == nil {
		t.Error("a malformed glob must be an error")
	}
}

func runIn(t *testing.T, dir, script string) {
	t.Helper()
	cmd := execCommand("sh", "-ec", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}
