package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	cases := []struct {
		name, a, b, want string
	}{
		{"equal", "x\n", "x\n", ""},
		{"change", "a\nb\nc\n", "a\nB\nc\n", "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"no newline", "a", "b", "--- a\n+++ b\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\nY\n",
			"--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+Y\n"},
		{"insert", "a\nc\n", "a\nb\nc\n", "--- a\n+++ b\n@@ -1,2 +1,3 @@\n a\n+b\n c\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, trunc := Unified("a", "b", tc.a, tc.b, 1<<16)
			if got != tc.want || trunc {
				t.Errorf("got %q (truncated %v); want %q", got, trunc, tc.want)
			}
		})
	}
}

func TestUnifiedTruncates(t *testing.T) {
	a := strings.Repeat("line\n", 10000)
	b := strings.Repeat("LINE\n", 10000)
	got, trunc := Unified("a", "b", a, b, 1000)
	if !trunc || len(got) > 1000 || !strings.HasSuffix(got, "\n") {
		t.Errorf("len %d truncated %v; want <= 1000, truncated, whole lines", len(got), trunc)
	}
}

// TestLineDiffBounded gives the diff more edits than maxEdits: it falls
// back to one replacement instead of quadratic memory.
func TestLineDiffBounded(t *testing.T) {
	var a, b []string
	for i := 0; i < 3*maxEdits; i++ {
		a = append(a, "a\n", "same\n")
		b = append(b, "b\n", "same\n")
	}
	checkScript(t, a, b, lineDiff(a, b))
}

// checkScript verifies an edit script turns a into b.
func checkScript(t *testing.T, a, b []string, es []edit) {
	t.Helper()
	var gotA, gotB []string
	for _, e := range es {
		if e.op != '+' {
			gotA = append(gotA, e.line)
		}
		if e.op != '-' {
			gotB = append(gotB, e.line)
		}
	}
	if strings.Join(gotA, "") != strings.Join(a, "") || strings.Join(gotB, "") != strings.Join(b, "") {
		t.Fatalf("edit script does not rebuild the inputs:\na=%q\nb=%q\nscript=%q", a, b, es)
	}
}

func FuzzLineDiff(f *testing.F) {
	f.Add("", "")                      // both empty
	f.Add("a\nb\nc\n", "a\nc\n")       // one deletion
	f.Add("a", "a\n")                  // only the final newline differs
	f.Add("x\x00y\n", "\xff\xfe\n")    // NUL and invalid UTF-8 (the diff itself must not care)
	f.Add("a\na\na\n", "a\nb\na\nb\n") // repeated lines: many equal-cost paths
	f.Add("\n\n\n", "\n")              // empty lines
	f.Fuzz(func(t *testing.T, a, b string) {
		la, lb := splitLines(a), splitLines(b)
		checkScript(t, la, lb, lineDiff(la, lb))
		d, _ := Unified("a", "b", a, b, 4096)
		if len(d) > 4096 {
			t.Fatalf("diff of %d bytes over the limit", len(d))
		}
		if d, _ = Unified("a", "b", a, b, 5); len(d) > 5 {
			t.Fatalf("diff of %d bytes over the limit", len(d))
		}
	})
}

func TestGlob(t *testing.T) {
	cases := []struct {
		glob, path string
		want       bool
	}{
		{".env", ".env", true},
		{".env", "a/.env", false},
		{"**/.env", ".env", true},
		{"**/.env", "a/b/.env", true},
		{"**/.env", "a/.envrc", false},
		{".git/hooks/**", ".git/hooks", true},
		{".git/hooks/**", ".git/hooks/pre-commit", true},
		{".git/hooks/**", ".git/hooksx/a", false},
		{".git/hooks/**", ".git/config", false},
		{"/.github/**", ".github/workflows/ci.yml", true},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/x/a.go", false},
		{"**/*.pem", "k/x.pem", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
	}
	for _, tc := range cases {
		g, err := CompileGlob(tc.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Match(tc.path); got != tc.want {
			t.Errorf("%s ~ %s: got %v; want %v", tc.glob, tc.path, got, tc.want)
		}
	}
	for _, bad := range []string{"", "a//b", "a**", "[", "/"} {
		if _, err := CompileGlob(bad); err == nil {
			t.Errorf("CompileGlob(%q) succeeded", bad)
		}
	}
}

// TestDiffBudget: a change set's diffs stop at the set budget and the
// cut is marked on the set and on the files.
func TestDiffBudget(t *testing.T) {
	ws := t.TempDir()
	up := t.TempDir()
	for i := 0; i < 5; i++ {
		if err := os.WriteFile(filepath.Join(up, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat("text line\n", 100)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := Compute(ws, nil, up, Limits{FileDiff: 1 << 10, SetDiff: 1500, DiffInput: 1 << 20})
	if err != nil {
		t.Skipf("compute: %v", err) // reading layers is Linux-only
	}
	if !cs.DiffTruncated {
		t.Error("set not marked truncated")
	}
	var skipped, truncated int
	for _, c := range cs.Changes {
		if c.DiffSkipped == DiffBudget {
			skipped++
		}
		if c.DiffTruncated {
			truncated++
		}
		if len(c.Diff) > 1<<10 {
			t.Errorf("%s: %d bytes of diff over the per-file cap", c.Path, len(c.Diff))
		}
	}
	if skipped != 3 || truncated != 2 {
		t.Errorf("skipped %d, truncated %d; want 3 and 2", skipped, truncated)
	}
}
