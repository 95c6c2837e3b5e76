package policy

import (
	"net/netip"
	"testing"

	"github.com/ironvise/ironvise/internal/tripwire"
)

func TestPathGlob(t *testing.T) {
	cases := []struct {
		glob  string
		match []string
		miss  []string
	}{
		{"*.pem", []string{"/a.pem", "/w/certs/x.pem", "/.pem"}, []string{"/a.pem.bak", "/apem", "/a.pem/x"}},
		{"/etc/*", []string{"/etc/passwd"}, []string{"/etc", "/etc/ssl/x", "/etcx/a"}},
		{"/etc/**", []string{"/etc", "/etc/passwd", "/etc/ssl/certs/x"}, []string{"/etcx", "/x/etc/a"}},
		{"/etc/**/*.conf", []string{"/etc/a.conf", "/etc/x/y/a.conf"}, []string{"/etc/a.confx", "/etcx/a.conf"}},
		{"**/.ssh/id_*", []string{"/home/u/.ssh/id_rsa", "/.ssh/id_x"}, []string{"/home/u/.ssh/known_hosts", "/home/u/x.ssh/id_rsa"}},
		{".aws/credentials", []string{"/w/.aws/credentials", "/.aws/credentials"}, []string{"/w/x.aws/credentials", "/w/.aws/credentials.bak"}},
		{"/a/**/b/**/c", []string{"/a/b/c", "/a/x/b/y/z/c"}, []string{"/a/bc", "/a/b"}},
		{"file?.txt", []string{"/file1.txt", "/d/fileé.txt"}, []string{"/file10.txt", "/file.txt", "/file/.txt"}},
		{"[abc]x", []string{"/ax", "/d/cx"}, []string{"/dx", "/abx"}},
		{"[!abc]x", []string{"/dx"}, []string{"/ax", "//x"}},
		{"[^a-c]x", []string{"/dx"}, []string{"/bx"}},
		{"[]]x", []string{"/]x"}, []string{"/ax"}},
		{"[*]", []string{"/*"}, []string{"/a"}},
		{"*.{pem,key,p12}", []string{"/a.key", "/a.p12"}, []string{"/a.p1", "/a.{pem,key,p12}"}},
		{"{,x}y", []string{"/y", "/xy"}, []string{"/xxy"}},
		{"a.b+c(d)$", []string{"/a.b+c(d)$"}, []string{"/aXb+c(d)$"}},
		{"/", []string{""}, []string{"/a"}},
		{"*", []string{"/a", "/a/b"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.glob, func(t *testing.T) {
			g, err := compilePathGlob(tc.glob, false, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.match {
				if !g.match(normPath(p, false, false)) {
					t.Errorf("%q does not match %q", tc.glob, p)
				}
			}
			for _, p := range tc.miss {
				if g.match(normPath(p, false, false)) {
					t.Errorf("%q matches %q", tc.glob, p)
				}
			}
		})
	}
}

func TestPathFoldAndWindows(t *testing.T) {
	g, err := compilePathGlob("C:/Users/*/.SSH/**", true, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{`C:\Users\dev\.ssh\id_rsa`, `c:/users/DEV/.Ssh`} {
		if !g.match(normPath(p, true, true)) {
			t.Errorf("windows glob does not match %q", p)
		}
	}
	pre, err := compilePrefix(`C:\Windows\System32`, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if !prefixMatch(pre, normPath(`c:\windows\system32\drivers\etc\hosts`, true, true)) {
		t.Error("windows prefix does not match below it")
	}
	if prefixMatch(pre, normPath(`C:\Windows\System32x`, true, true)) {
		t.Error("windows prefix crosses a component boundary")
	}
	// On darwin, case folds but "\" is not a separator.
	if _, err := compilePrefix(`C:\x`, true, false); err == nil {
		t.Error("drive path accepted as a prefix on darwin")
	}
	darwin, _ := compilePathGlob("/Etc/*.CONF", true, false)
	if !darwin.match(normPath("/etc/a.conf", true, false)) {
		t.Error("darwin glob is case-sensitive")
	}
	linux, _ := compilePathGlob("/Etc/*.CONF", false, false)
	if linux.match(normPath("/etc/a.conf", false, false)) {
		t.Error("linux glob folds case")
	}
}

func TestPrefix(t *testing.T) {
	cases := []struct {
		prefix, path string
		want         bool
	}{
		{"/etc/shadow", "/etc/shadow", true},
		{"/etc/shadow", "/etc/shadow/x", true},
		{"/etc/shadow", "/etc/shadow-", false},
		{"/etc/shadow", "/etc/shadowx", false},
		{"/etc/shadow", "/etc", false},
		{"/etc/", "/etc/passwd", true},
		{"/etc//ssl/.", "/etc/ssl/a", true},
		{"/", "/", true},
		{"/", "/anything/below", true},
	}
	for _, tc := range cases {
		pre, err := compilePrefix(tc.prefix, false, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.prefix, err)
		}
		if got := prefixMatch(pre, normPath(tc.path, false, false)); got != tc.want {
			t.Errorf("prefix %q on %q = %v; want %v", tc.prefix, tc.path, got, tc.want)
		}
	}
	if _, err := compilePrefix("/etc/../root", false, false); err == nil {
		t.Error(`prefix with ".." accepted`)
	}
}

func TestHostMatch(t *testing.T) {
	cases := []struct {
		rule, host string
		ip, want   bool
	}{
		{"example.com", "example.com", false, true},
		{"example.com", "a.b.example.com", false, true},
		{"example.com", "evil-example.com", false, false},
		{"example.com", "example.com.evil.io", false, false},
		{"example.com", "xexample.com", false, false},
		{"0.1", "10.0.0.1", true, false},
		{"10.0.0.1", "10.0.0.1", true, true},
	}
	for _, tc := range cases {
		if got := hostMatch(tc.rule, tc.host, tc.ip); got != tc.want {
			t.Errorf("hostMatch(%q, %q) = %v; want %v", tc.rule, tc.host, got, tc.want)
		}
	}
	for in, want := range map[string]string{
		"Example.COM.": "example.com", "bücher.example": "xn--bcher-kva.example", "[::1]": "::1", "::FFFF:10.0.0.1": "::ffff:10.0.0.1",
	} {
		if got, err := normalizeHost(in); err != nil || got != want {
			t.Errorf("normalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ".", "example.com:443", "user@example.com", "*.example.com", "exa mple.com", "a/b"} {
		if got, err := normalizeHost(bad); err == nil {
			t.Errorf("normalizeHost(%q) = %q; want an error", bad, got)
		}
	}
}

func TestCIDRTest(t *testing.T) {
	ten := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	addr := netip.MustParseAddr
	cases := []struct {
		name string
		u    *tripwire.URLView
		want cidrResult
	}{
		{"no URL", nil, cidrNo},
		{"literal in range", &tripwire.URLView{IP: addr("10.1.1.1")}, cidrYes},
		{"mapped literal in range", &tripwire.URLView{IP: addr("::ffff:10.1.1.1")}, cidrYes},
		{"literal out of range", &tripwire.URLView{IP: addr("11.1.1.1")}, cidrNo},
		{"one resolved address in range", &tripwire.URLView{Resolved: true, Addrs: []netip.Addr{addr("8.8.8.8"), addr("10.0.0.9")}}, cidrYes},
		{"resolved out of range", &tripwire.URLView{Resolved: true, Addrs: []netip.Addr{addr("8.8.8.8")}}, cidrNo},
		{"resolution failed", &tripwire.URLView{Resolved: true, ResolveErr: errNoSuchHost}, cidrUnknown},
		{"never resolved", &tripwire.URLView{Host: "example.com"}, cidrNo},
	}
	for _, tc := range cases {
		if got := cidrTest(ten, tc.u); got != tc.want {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
	}
}
