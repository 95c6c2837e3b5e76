package progname

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestName: a hint says "ironvise" only when that runs this very binary;
// otherwise it names the path the user typed.
func TestName(t *testing.T) {
	exe := Default
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	root := t.TempDir()
	file := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pathDir := filepath.Join(root, "path")
	installed := file(filepath.Join("path", exe))
	built := file(filepath.Join("checkout", "bin", exe))
	spaced := file(filepath.Join("my tools", exe))
	quoted := file(filepath.Join("it's", exe))
	plain := filepath.Join(root, "plain", exe)
	if err := os.MkdirAll(filepath.Dir(plain), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link", exe)
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(installed, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	sep := string(os.PathListSeparator)
	for _, tc := range []struct {
		name, invoked, path, want string
	}{
		{"found on PATH by name", "ironvise", pathDir, "ironvise"},
		{"renamed and found on PATH", "iv", pathDir, "iv"},
		{"no name at all", "", "", "ironvise"},
		{"the PATH binary by its path", installed, pathDir, "ironvise"},
		{"a link to the PATH binary", link, pathDir, "ironvise"},
		{"the first ironvise on PATH decides", installed, filepath.Dir(built) + sep + pathDir, installed},
		{"a build that is not the one on PATH", built, pathDir, built},
		{"no ironvise on PATH", built, "", built},
		{"an ironvise on PATH that cannot run", plain, filepath.Dir(plain), plain},
		{"relative PATH entries are not searched", built, "." + sep + "bin" + sep, built},
		{"a path with a space", spaced, pathDir, "'" + spaced + "'"},
		{"a path with a quote", quoted, pathDir, `'` + filepath.Join(root, `it'\''s`, exe) + `'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Name(tc.invoked, tc.path); got != tc.want {
				t.Fatalf("Name(%q, %q) = %q; want %q", tc.invoked, tc.path, got, tc.want)
			}
		})
	}
}

// TestRewrite rewrites the quoted hints and nothing else.
func TestRewrite(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{
			"ironvise/policy: not found; see `ironvise policy list` or run 'ironvise sessions'; another ironvise serve answers",
			"ironvise/policy: not found; see `P policy list` or run 'P sessions'; another ironvise serve answers",
		},
		{"'ironvise 'ironvise x'", "'P 'P x'"},
		{"ends with `ironvise ", "ends with `P "},
		{"'ironvise", "'ironvise"},
		{"'ironvise-x y'", "'ironvise-x y'"},
		{"", ""},
	} {
		if got := Rewrite(tc.msg, "ironvise"); got != tc.msg {
			t.Errorf("Rewrite(%q) to the plain name = %q", tc.msg, got)
		}
		if got := Rewrite(tc.msg, "P"); got != tc.want {
			t.Errorf("Rewrite(%q) = %q; want %q", tc.msg, got, tc.want)
		}
	}
}
