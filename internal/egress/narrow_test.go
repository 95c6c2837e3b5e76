package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestNarrow(t *testing.T) {
	d, err := ParseDomains("pypi.org,*.pythonhosted.org,*.github.com,api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	cidrs := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	r := NewRules(d, cidrs)
	t.Run("kept", func(t *testing.T) {
		n, err := r.Narrow([]string{"PyPI.org.", "*.pythonhosted.org", "files.pythonhosted.org", "*.api.github.com", "api.example.com", "pypi.org"})
		if err != nil {
			t.Fatal(err)
		}
		want := "pypi.org,*.pythonhosted.org,files.pythonhosted.org,*.api.github.com,api.example.com"
		if got := strings.Join(n.Domains(), ","); got != want {
			t.Fatalf("got %s; want %s", got, want)
		}
		if len(n.CIDRs()) != 1 || n.CIDRs()[0] != cidrs[0] {
			t.Fatalf("cidrs %v; want the configured %v", n.CIDRs(), cidrs)
		}
		// The narrowed list decides hosts by itself: a host the
		// configured list allows but the narrowed one omits is refused.
		if v := n.CheckHost("raw.github.com"); !v.Denied() {
			t.Errorf("raw.github.com allowed by %q after narrowing to *.api.github.com", v.Rule)
		}
		if v := n.CheckHost("x.api.github.com"); v.Denied() {
			t.Errorf("x.api.github.com refused: %s", v.Message)
		}
	})
	t.Run("empty list allows no host", func(t *testing.T) {
		n, err := r.Narrow(nil)
		if err != nil {
			t.Fatal(err)
		}
		if v := n.CheckHost("pypi.org"); !v.Denied() {
			t.Errorf("pypi.org allowed by an empty narrowed list")
		}
	})
	t.Run("widening refused", func(t *testing.T) {
		for _, e := range []string{
			"evil.test",          // not on the list at all
			"*.pypi.org",         // an exact entry never covers a wildcard
			"example.com",        // the parent of an exact entry
			"*.example.com",      // a wildcard above an exact entry
			"github.com",         // *.github.com does not cover github.com
			"*.com",              // a wildcard above a configured wildcard
			"pythonhosted.org",   // nor the bare base of a wildcard
			"pypi.org.evil.test", // suffix games
		} {
			_, err := r.Narrow([]string{"pypi.org", e})
			if !errors.Is(err, ErrWiden) {
				t.Errorf("Narrow(%q): err %v; want ErrWiden", e, err)
				continue
			}
			if !strings.Contains(err.Error(), `"`+e+`"`) || !strings.Contains(err.Error(), "ECTO_SANDBOX_ALLOWED_DOMAINS") {
				t.Errorf("Narrow(%q): error does not name the entry and the fix: %v", e, err)
			}
		}
	})
	t.Run("bad entries", func(t *testing.T) {
		for _, e := range []string{"", "*", "*.", "a.*.com", "10.0.0.1", "::1", "pypi.org:443", "https://pypi.org", "2130706433"} {
			if _, err := r.Narrow([]string{e}); err == nil || errors.Is(err, ErrWiden) {
				t.Errorf("Narrow(%q): err %v; want a validation error", e, err)
			}
		}
	})
	t.Run("empty configured list", func(t *testing.T) {
		_, err := NewRules(nil, cidrs).Narrow([]string{"pypi.org"})
		if !errors.Is(err, ErrWiden) || !strings.Contains(err.Error(), "(empty)") {
			t.Fatalf("err %v; want ErrWiden naming the empty list", err)
		}
	})
}
