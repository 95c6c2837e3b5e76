package tripwire

import (
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

// TestSSRFEmbeddedIPv4: a host that resolves to an IPv6 address carrying
// a blocked IPv4 address is refused, by every embedding (item 7).
func TestSSRFEmbeddedIPv4(t *testing.T) {
	ws := workspace(t)
	base := setup(t, ws, nil)
	hosts := fakeResolver{
		"nat64-local.example.com":   {"64:ff9b:1::a9fe:a9fe"},
		"nat64-local48.example.com": {"64:ff9b:1:a9fe:a9:fe00::"},
		"compat.example.com":        {"::a9fe:a9fe"},
		"6to4.example.com":          {"2002:a9fe:a9fe::"},
		"siit.example.com":          {"::ffff:0:a9fe:a9fe"},
		"teredo-server.example.com": {"2001:0:a9fe:a9fe::1"},
		"teredo-client.example.com": {"2001:0:4136:e378:8000:63bf:5601:5601"},
		"isatap.example.com":        {"2606:4700::5efe:a9fe:a9fe"},
		"6to4-loop.example.com":     {"2002:7f00:1::"},
		"nat64-private.example.com": {"64:ff9b::a00:1"},
		// Public addresses in the same forms stay allowed.
		"6to4-public.example.com":   {"2002:5db8:d70e::"},
		"teredo-public.example.com": {"2001:0:4136:e378:8000:63bf:a247:28f1"},
		"nat64-public.example.com":  {"64:ff9b:1::5db8:d70e"},
		"plain6.example.com":        {"2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
	}
	tw := New(base.cfg, Options{Workspace: ws, Resolver: hosts})
	run(t, tw, []tcase{
		{"RFC 8215 local-use NAT64", hg("https://nat64-local.example.com/"), verdict.URLResolvedIPBlocked, "169.254.169.254", nil},
		{"RFC 8215 at /48", hg("https://nat64-local48.example.com/"), verdict.URLResolvedIPBlocked, "169.254", nil},
		{"IPv4-compatible", hg("https://compat.example.com/"), verdict.URLResolvedIPBlocked, "169.254.169.254", nil},
		{"6to4", hg("https://6to4.example.com/"), verdict.URLResolvedIPBlocked, "169.254.169.254", nil},
		{"SIIT", hg("https://siit.example.com/"), verdict.URLResolvedIPBlocked, "169.254.169.254", nil},
		{"Teredo server", hg("https://teredo-server.example.com/"), verdict.URLResolvedIPBlocked, "169.254.169.254", nil},
		{"Teredo client", hg("https://teredo-client.example.com/"), verdict.URLResolvedIPBlocked, "169.254.169.254", nil},
		{"ISATAP", hg("https://isatap.example.com/"), verdict.URLResolvedIPBlocked, "169.254.169.254", nil},
		{"6to4 loopback", hg("https://6to4-loop.example.com/"), verdict.URLResolvedIPBlocked, "127.0.0.1", nil},
		{"NAT64 private", hg("https://nat64-private.example.com/"), verdict.URLResolvedIPBlocked, "10.0.0.1", nil},
		{"6to4 public", hg("https://6to4-public.example.com/"), verdict.OK, "", nil},
		{"Teredo public", hg("https://teredo-public.example.com/"), verdict.OK, "", nil},
		{"NAT64 public", hg("https://nat64-public.example.com/"), verdict.OK, "", nil},
		{"plain IPv6", hg("https://plain6.example.com/"), verdict.OK, "", nil},
	})
	// IP literals: refused unless allowed; an allowed range does not
	// admit a blocked address carried inside it.
	run(t, base, []tcase{
		{"literal local-use NAT64", hg("https://[64:ff9b:1::a9fe:a9fe]/"), verdict.URLIPLiteral, "", nil},
		{"literal 6to4", hg("https://[2002:a9fe:a9fe::]/"), verdict.URLIPLiteral, "", nil},
	})
	wide := setup(t, ws, map[string]any{"allowed_ip_ranges": []string{"2002::/16", "10.0.0.0/8"}})
	run(t, wide, []tcase{
		{"allowed range carrying metadata", hg("https://[2002:a9fe:a9fe::]/"), verdict.URLIPLiteral, "169.254.169.254", nil},
		{"allowed range carrying allowed", hg("https://[2002:a00:1::]/"), verdict.OK, "", nil},
		{"allowed range, public inside", hg("https://[2002:5db8:d70e::]/"), verdict.OK, "", nil},
	})
}
