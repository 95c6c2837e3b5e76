package secretpaths

import (
	"errors"
	"path/filepath"
	"strings"
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

// FuzzWithin: Within answers what its definition says — p is root, or
// starts with root followed by a separator (one already ending root
// counts) — for any pair of strings.
func FuzzWithin(f *testing.F) {
	for _, c := range [][2]string{
		{"/home/u/.ssh", "/home/u"}, {"/home/u", "/home/u"}, {"/home/u2", "/home/u"},
		{"/home/u/", "/home/u"}, {"/home", "/home/u"}, {"/x", "/"}, {"/", "/"}, {"", ""},
		{"/home/u/.ssh", "/home/u/"}, {"a/b", "a"}, {"ab", "a"},
	} {
		f.Add(c[0], c[1])
	}
	// within is the definition, written the plain way (it builds root
	// plus a separator).
	within := func(p, root string) bool {
		if p == root {
			return true
		}
		if !strings.HasSuffix(root, string(filepath.Separator)) {
			root += string(filepath.Separator)
		}
		return strings.HasPrefix(p, root)
	}
	f.Fuzz(func(t *testing.T, p, root string) {
		if got, want := WithinFold(p, root, false), within(p, root); got != want {
			t.Fatalf("WithinFold(%q, %q, false) = %v, want %v", p, root, got, want)
		}
		if got, want := WithinFold(p, root, true), within(strings.ToLower(p), strings.ToLower(root)); got != want {
			t.Fatalf("WithinFold(%q, %q, true) = %v, want %v", p, root, got, want)
		}
	})
}

// TestWithinAllocatesNothing: the case-sensitive comparison builds no
// string; a tier compares each protected path with each readable root for
// every command.
func TestWithinAllocatesNothing(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		_ = WithinFold("/home/u/.ssh/id_ed25519", "/home/u", false)
		_ = WithinFold("/usr/lib", "/home/u", false)
	})
	if n != 0 {
		t.Fatalf("WithinFold allocated %v times per call pair", n)
	}
}
