package config

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestNetworkDefaultsToNone(t *testing.T) {
	n := mustLoad(t, "HOME", "/h").Sandbox.Network
	if n.Mode != NetworkNone || n.Proxy() || n.AllowedDomains != nil || n.AllowCIDRs != nil {
		t.Fatalf("default network: %+v", n)
	}
}

func TestNetworkProxy(t *testing.T) {
	n := mustLoad(t, "HOME", "/h", "ECTO_SANDBOX_NETWORK", "Proxy",
		"ECTO_SANDBOX_ALLOWED_DOMAINS", "PyPI.org, files.pythonhosted.org.,*.github.com",
		"ECTO_SANDBOX_EGRESS_ALLOW_CIDRS", "10.200.0.0/24, fd00::1").Sandbox.Network
	if !n.Proxy() {
		t.Fatalf("mode %q; want proxy", n.Mode)
	}
	if want := []string{"pypi.org", "files.pythonhosted.org", "*.github.com"}; !reflect.DeepEqual(n.AllowedDomains, want) {
		t.Fatalf("domains %q; want %q", n.AllowedDomains, want)
	}
	if want := []netip.Prefix{netip.MustParsePrefix("10.200.0.0/24"), netip.MustParsePrefix("fd00::1/128")}; !reflect.DeepEqual(n.AllowCIDRs, want) {
		t.Fatalf("cidrs %v; want %v", n.AllowCIDRs, want)
	}
	// Address ranges alone are enough to reach something.
	if n := mustLoad(t, "HOME", "/h", "ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_EGRESS_ALLOW_CIDRS", "10.0.0.0/8").Sandbox.Network; !n.Proxy() {
		t.Fatalf("proxy with ranges only: %+v", n)
	}
}

// A setting that would silently do nothing is an error that names the fix.
func TestNetworkRejectsMalformedOrIdle(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"ECTO_SANDBOX_NETWORK", "host"}, `ECTO_SANDBOX_NETWORK="host": unknown value (accepted: none, proxy)`},
		{[]string{"ECTO_SANDBOX_NETWORK", "proxy"}, "the proxy would refuse every connection"},
		{[]string{"ECTO_SANDBOX_ALLOWED_DOMAINS", "pypi.org"}, "commands get no network in this mode"},
		{[]string{"ECTO_SANDBOX_NETWORK", "none", "ECTO_SANDBOX_EGRESS_ALLOW_CIDRS", "10.0.0.0/8"}, "commands get no network in this mode"},
		{[]string{"ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_ALLOWED_DOMAINS", "*"}, "a bare wildcard would allow every host"},
		{[]string{"ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_ALLOWED_DOMAINS", "a.*.com"}, "only as a leading"},
		{[]string{"ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_ALLOWED_DOMAINS", "169.254.169.254"}, "an IP address"},
		{[]string{"ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_ALLOWED_DOMAINS", "pypi.org:443"}, "a port"},
		{[]string{"ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_ALLOWED_DOMAINS", "pypi.org,,x.org"}, "empty entry"},
		{[]string{"ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_EGRESS_ALLOW_CIDRS", "10.0.0.1/8"}, "host bits are set"},
		{[]string{"ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_EGRESS_ALLOW_CIDRS", "intranet"}, "not an address range"},
	} {
		t.Run(strings.Join(tc.env, "="), func(t *testing.T) {
			env := map[string]string{"HOME": "/h"}
			for i := 0; i+1 < len(tc.env); i += 2 {
				env[tc.env[i]] = tc.env[i+1]
			}
			_, err := Load(MapLookup(env))
			var ce *Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error containing %q", err, tc.want)
			}
		})
	}
}
