package policy

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/ironvise/ironvise/internal/tripwire"
)

// The [network] section (docs/policies.md#network) narrows the sandbox
// network the operator configured (ECTO_SANDBOX_NETWORK,
// ECTO_SANDBOX_ALLOWED_DOMAINS) for the sessions of this policy:
//
//	[network]
//	mode = "none"                                         # no network for this policy
//	allowed_domains = ["pypi.org", "*.pythonhosted.org"]  # or: only these hosts
//
// A policy can only take network away. Its allowed_domains must lie inside
// the configured list; the session that composes the two refuses to start
// when an entry does not (package egress, Rules.Narrow), so the error names
// the entry at the start of the session, not as a refused connection later.
// The policy itself knows nothing of the configuration: here the entries
// are only validated and normalised.

// Network modes a policy may state.
const (
	// NetworkModeNone turns the network off for the policy's sessions,
	// whatever the configuration allows.
	NetworkModeNone = "none"
	// NetworkModeProxy states that the policy's sessions use the egress
	// proxy the configuration provides (ECTO_SANDBOX_NETWORK=proxy); a
	// session refuses to start when the configuration gives no network.
	NetworkModeProxy = "proxy"
)

type rawNetwork struct {
	Mode           any `toml:"mode"`
	AllowedDomains any `toml:"allowed_domains"`
}

var networkSchema = &schema{keys: []string{"mode", "allowed_domains"}}

// Network is a policy's [network] section.
type Network struct {
	// Mode is "" (the configuration decides), NetworkModeNone or
	// NetworkModeProxy.
	Mode string
	// AllowedDomains, when Narrowed, is the list the policy narrows the
	// configured one to: exact host names or "*.name", normalised
	// (lowercase, IDNA, no trailing dot). Empty and Narrowed: no host.
	AllowedDomains []string
	// Narrowed reports that allowed_domains is set.
	Narrowed bool
}

// Network returns the policy's [network] section and whether the policy
// has one. A nil policy has none.
func (p *Policy) Network() (Network, bool) {
	if p == nil || p.network == nil {
		return Network{}, false
	}
	n := *p.network
	n.AllowedDomains = slices.Clone(n.AllowedDomains)
	return n, true
}

func (c *compiler) compileNetwork(p *Policy, r *rawNetwork) {
	if r == nil {
		return
	}
	n := &Network{}
	if s, ok := c.str("network.mode", r.Mode); ok {
		switch s {
		case NetworkModeNone, NetworkModeProxy:
			n.Mode = s
		default:
			c.fail("network.mode", "unknown mode %q (allowed: none, proxy)", s)
		}
	}
	list, idx, present := c.list("network.allowed_domains", r.AllowedDomains, false)
	if present {
		n.Narrowed = true
		n.AllowedDomains = []string{}
		for k, e := range list {
			d, msg := networkDomain(e)
			if msg != "" {
				c.fail(elemPath("network.allowed_domains", idx[k]), "%q: %s", e, msg)
				continue
			}
			if !slices.Contains(n.AllowedDomains, d) {
				n.AllowedDomains = append(n.AllowedDomains, d)
			}
		}
	}
	if n.Mode == NetworkModeNone && n.Narrowed && len(n.AllowedDomains) > 0 {
		c.fail("network.allowed_domains", "lists hosts, but mode = \"none\" gives the sessions no network; remove one of the two")
	}
	p.network = n
}

// networkDomain validates one allowed_domains entry as
// ECTO_SANDBOX_ALLOWED_DOMAINS entries are validated, and normalises it; msg
// says what is wrong.
func networkDomain(e string) (d, msg string) {
	name, wild := strings.CutPrefix(strings.TrimSpace(e), "*.")
	switch {
	case strings.TrimSpace(e) == "":
		return "", "must not be empty"
	case e == "*" || name == "":
		return "", "a bare wildcard would allow every host"
	case strings.Contains(name, "*"):
		return "", "a wildcard is allowed only as a leading *."
	case strings.ContainsAny(name, "[]/@:# \t\r\n"):
		return "", "not a host name (write a host name without scheme, port or path, or *.name)"
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "", "an IP address; address ranges are opted in with ECTO_SANDBOX_EGRESS_ALLOW_CIDRS"
	}
	n, err := tripwire.NormalizeHost(name)
	if err != nil {
		return "", err.Error()
	}
	if tripwire.IsLegacyIP(n) {
		return "", "a numeric IPv4 form; address ranges are opted in with ECTO_SANDBOX_EGRESS_ALLOW_CIDRS"
	}
	if wild {
		n = "*." + n
	}
	return n, ""
}
