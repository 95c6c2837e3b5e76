package secretpaths

import (
	"errors"
	"path/filepath"
	"testing"
)

// FuzzParseEntry: no input panics; an accepted entry is clean, absolute or
// home-relative without "..", and prints back as an entry that parses to
// itself.
func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{
		"/srv/secrets",    // absolute
		"~/.config/myapp", // home-relative
		"~",               // a whole home
		"~alice/.ssh",     // another user's tilde
		"/srv/../etc",     // traversal
		"//srv//x/",       // doubled and trailing separators
		"~/../x",          // traversal after the tilde
		"/usr",            // a system directory
		"rel",             // relative
		"/a/\x00",         // NUL
		"/a/[b]",          // a glob
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEntry(s)
		if err != nil {
			if !errors.Is(err, ErrEntry) {
				t.Fatalf("%q: error %v does not wrap ErrEntry", s, err)
			}
			return
		}
		if e.Path != filepath.Clean(e.Path) || e.HomeRelative == filepath.IsAbs(e.Path) || containsDotDot(e.Path) {
			t.Fatalf("%q: accepted %+v", s, e)
		}
		again, err := ParseEntry(e.String())
		if err != nil || again != e {
			t.Fatalf("%q: %+v prints as %q, which parses to %+v, %v", s, e, e.String(), again, err)
		}
	})
}

func containsDotDot(p string) bool {
	for _, c := range SplitPath(p) {
		if c == ".." {
			return true
		}
	}
	return false
}
