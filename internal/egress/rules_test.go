package egress

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

func TestParseDomains(t *testing.T) {
	got, err := ParseDomains(" PyPI.org., *.GitHub.com ,files.pythonhosted.org,bücher.example")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pypi.org", "*.github.com", "files.pythonhosted.org", "xn--bcher-kva.example"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"a.com,,b.com", "*", "*.", "a.*.com", "*.*.com", "foo*.com", "10.0.0.1", "::1", "[::1]", "a.com:443", "2130706433", "0x7f.1", "a b.com", "http://a.com"} {
		if _, err := ParseDomains(bad); err == nil {
			t.Errorf("ParseDomains(%q) accepted", bad)
		} else if !strings.Contains(err.Error(), "ECTO_SANDBOX_ALLOWED_DOMAINS entry") {
			t.Errorf("ParseDomains(%q): error does not name the entry: %v", bad, err)
		}
	}
	if got, err := ParseDomains(""); err != nil || got != nil {
		t.Errorf("empty: %v %v", got, err)
	}
}

func TestParseCIDRs(t *testing.T) {
	got, err := ParseCIDRs("10.0.0.0/8, fd00::/8,192.0.2.7")
	if err != nil || len(got) != 3 || got[2].String() != "192.0.2.7/32" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"10.0.0.1/8", "nope", "10.0.0.0/8,", "fe80::1%eth0"} {
		if _, err := ParseCIDRs(bad); err == nil {
			t.Errorf("ParseCIDRs(%q) accepted", bad)
		}
	}
}

func TestCheckHost(t *testing.T) {
	d, err := ParseDomains("*.github.com,pypi.org")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRules(d, nil)
	for host, rule := range map[string]string{
		"api.github.com": "*.github.com", "A.B.GitHub.com.": "*.github.com", "pypi.org": "pypi.org", "PyPI.org.": "pypi.org",
		"github.com": "", "evilgithub.com": "", "github.com.evil.io": "", "www.pypi.org": "", "pypi.org.evil": "",
		"127.0.0.1": "", "2130706433": "", "": "",
	} {
		v := r.CheckHost(host)
		if rule == "" {
			if !v.Denied() {
				t.Errorf("CheckHost(%q) allowed by %q", host, v.Rule)
			}
			continue
		}
		if v.Denied() || v.Rule != rule {
			t.Errorf("CheckHost(%q) = %v %q %q, want allow by %q", host, v.Decision, v.Code, v.Message, rule)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	open := NewRules(nil, nil)
	optIn := NewRules(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.1.0.0/16")})
	for _, tc := range []struct {
		addr       string
		open, opts bool // allowed without and with the opt-in
	}{
		{"93.184.216.34", true, true},
		{"2606:4700::1111", true, true},
		{"169.254.169.254", false, false},
		{"::ffff:169.254.169.254", false, false},
		{"64:ff9b::a9fe:a9fe", false, false},
		{"2002:a9fe:a9fe::", false, false},
		{"127.0.0.1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"::1", false, false},
		{"10.1.2.3", false, true},
		{"10.2.0.1", false, false},
		{"192.168.1.1", false, false},
		{"fe80::1", false, false},
		{"0.0.0.0", false, false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := !open.CheckAddr(a).Denied(); got != tc.open {
			t.Errorf("CheckAddr(%s) without opt-in allowed=%v, want %v", a, got, tc.open)
		}
		v := optIn.CheckAddr(a)
		if got := !v.Denied(); got != tc.opts {
			t.Errorf("CheckAddr(%s) with opt-in allowed=%v, want %v", a, got, tc.opts)
		}
		if v.Denied() && v.Code != verdict.EgressAddrBlocked {
			t.Errorf("CheckAddr(%s) code %s", a, v.Code)
		}
	}
	if v := optIn.CheckIP(netip.MustParseAddr("93.184.216.34")); v.Code != verdict.EgressIPLiteral {
		t.Errorf("a public IP literal outside the opt-in: %s", v.Code)
	}
	if v := optIn.CheckIP(netip.MustParseAddr("127.0.0.2")); v.Denied() || v.Rule != "cidr:127.0.0.0/8" {
		t.Errorf("an opted-in IP literal: %v %s %q", v.Decision, v.Code, v.Rule)
	}
}
