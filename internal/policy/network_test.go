package policy

import (
	"strings"
	"testing"
)

func TestNetworkSection(t *testing.T) {
	t.Run("absent", func(t *testing.T) {
		p, err := Parse("p.toml", []byte("name = \"x\"\n"), Options{GOOS: "linux"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.Network(); ok {
			t.Fatal("a policy without [network] reports one")
		}
		var nilPolicy *Policy
		if _, ok := nilPolicy.Network(); ok {
			t.Fatal("a nil policy reports a [network] section")
		}
	})
	t.Run("narrowing list normalised", func(t *testing.T) {
		src := "name = \"x\"\n[network]\nallowed_domains = [\"PyPI.org.\", \"*.PythonHosted.org\", \"pypi.org\", \"bücher.example\"]\n"
		p, err := Parse("p.toml", []byte(src), Options{GOOS: "linux"})
		if err != nil {
			t.Fatal(err)
		}
		n, ok := p.Network()
		if !ok || !n.Narrowed || n.Mode != "" {
			t.Fatalf("got %+v, %v; want a narrowing section without a mode", n, ok)
		}
		if got, want := strings.Join(n.AllowedDomains, ","), "pypi.org,*.pythonhosted.org,xn--bcher-kva.example"; got != want {
			t.Fatalf("allowed_domains %s; want %s", got, want)
		}
	})
	t.Run("mode none, dotted keys", func(t *testing.T) {
		p, err := Parse("p.toml", []byte("name = \"x\"\nnetwork.mode = \"none\"\n"), Options{GOOS: "linux"})
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := p.Network(); !ok || n.Mode != NetworkModeNone || n.Narrowed {
			t.Fatalf("got %+v, %v; want mode none", n, ok)
		}
	})
	t.Run("empty list is a narrowing to no host", func(t *testing.T) {
		p, err := Parse("p.toml", []byte("name = \"x\"\n[network]\nallowed_domains = []\n"), Options{GOOS: "linux"})
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := p.Network(); !n.Narrowed || len(n.AllowedDomains) != 0 {
			t.Fatalf("got %+v; want narrowed to nothing", n)
		}
	})
	for _, c := range []struct{ name, src, want string }{
		{"unknown mode", "name = \"x\"\n[network]\nmode = \"open\"\n", "p.toml:3: network.mode: unknown mode \"open\" (allowed: none, proxy)"},
		{"unknown key", "name = \"x\"\n[network]\nallow = [\"a.com\"]\n", "p.toml:3: network.allow: unknown key"},
		{"key case", "name = \"x\"\n[network]\nMode = \"none\"\n", "p.toml:3: network.Mode: unknown key (keys are case-sensitive: did you mean \"mode\"?)"},
		{"dotted key case", "name = \"x\"\nnetwork.Allowed_domains = []\n", "p.toml:2: network.Allowed_domains: unknown key (keys are case-sensitive: did you mean \"allowed_domains\"?)"},
		{"bare wildcard", "name = \"x\"\n[network]\nallowed_domains = [\"*\"]\n", "p.toml:3: network.allowed_domains[0]: \"*\": a bare wildcard would allow every host"},
		{"inner wildcard", "name = \"x\"\n[network]\nallowed_domains = [\"a.*.com\"]\n", "p.toml:3: network.allowed_domains[0]: \"a.*.com\": a wildcard is allowed only as a leading *."},
		{"url", "name = \"x\"\n[network]\nallowed_domains = [\"ok.com\", \"https://pypi.org\"]\n", "p.toml:3: network.allowed_domains[1]: \"https://pypi.org\": not a host name"},
		{"ip", "name = \"x\"\n[network]\nallowed_domains = [\"10.0.0.1\"]\n", "p.toml:3: network.allowed_domains[0]: \"10.0.0.1\": an IP address"},
		{"legacy ip", "name = \"x\"\n[network]\nallowed_domains = [\"2130706433\"]\n", "p.toml:3: network.allowed_domains[0]: \"2130706433\": a numeric IPv4 form"},
		{"not a list", "name = \"x\"\n[network]\nallowed_domains = \"pypi.org\"\n", "p.toml:3: network.allowed_domains: expected array of strings, got string"},
		{"none with hosts", "name = \"x\"\n[network]\nmode = \"none\"\nallowed_domains = [\"pypi.org\"]\n", "p.toml:4: network.allowed_domains: lists hosts, but mode = \"none\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := loadErr(t, c.src, Options{})
			if !strings.Contains(got, c.want) {
				t.Fatalf("got %q; want it to contain %q", got, c.want)
			}
		})
	}
}
