package egress

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// ParseDomains parses ECTO_SANDBOX_ALLOWED_DOMAINS: comma-separated exact
// host names or "*." followed by a name. Entries are lowercased, stripped
// of one trailing dot and IDNA-encoded as tripwire.NormalizeHost does. An
// empty string is an empty list.
func ParseDomains(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for i, raw := range strings.Split(s, ",") {
		e := strings.TrimSpace(raw)
		bad := func(why string) error {
			return fmt.Errorf("ECTO_SANDBOX_ALLOWED_DOMAINS entry %d %q: %s; write exact host names or *.name, separated by commas", i+1, e, why)
		}
		if e == "" {
			return nil, bad("empty entry")
		}
		name, wild := strings.CutPrefix(e, "*.")
		switch {
		case e == "*" || name == "":
			return nil, bad("a bare wildcard would allow every host")
		case strings.Contains(name, "*"):
			return nil, bad("a wildcard is allowed only as a leading *.")
		case strings.ContainsAny(name, "[]/@ \t"):
			return nil, bad("not a host name")
		}
		if _, err := netip.ParseAddr(name); err == nil {
			return nil, bad("an IP address; list address ranges in ECTO_SANDBOX_EGRESS_ALLOW_CIDRS")
		}
		if strings.Contains(name, ":") {
			return nil, bad("a port or IPv6 address; list host names only (every port is allowed)")
		}
		n, err := tripwire.NormalizeHost(name)
		if err != nil {
			return nil, bad(err.Error())
		}
		if tripwire.IsLegacyIP(n) {
			return nil, bad("a numeric IPv4 form; list address ranges in ECTO_SANDBOX_EGRESS_ALLOW_CIDRS")
		}
		if wild {
			n = "*." + n
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseCIDRs parses ECTO_SANDBOX_EGRESS_ALLOW_CIDRS: comma-separated
// address ranges (10.0.0.0/8, fd00::/8) or single addresses, the explicit
// opt-in for destinations the address rules otherwise refuse. An empty
// string is an empty list.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []netip.Prefix
	for i, raw := range strings.Split(s, ",") {
		e := strings.TrimSpace(raw)
		p, err := netip.ParsePrefix(e)
		if err != nil {
			a, aerr := netip.ParseAddr(e)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("ECTO_SANDBOX_EGRESS_ALLOW_CIDRS entry %d %q: not an address range; write ranges such as 10.0.0.0/8 or fd00::/8, separated by commas", i+1, e)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("ECTO_SANDBOX_EGRESS_ALLOW_CIDRS entry %d %q: host bits are set; write %s", i+1, e, p.Masked())
		}
		out = append(out, p)
	}
	return out, nil
}

// Rules is the allow list of one command: the domains and the opted-in
// address ranges. It is read-only after NewRules and safe for concurrent
// use.
type Rules struct {
	domains []string
	cidrs   []netip.Prefix
}

// NewRules builds the rules from the results of ParseDomains and
// ParseCIDRs.
func NewRules(domains []string, cidrs []netip.Prefix) *Rules {
	return &Rules{domains: append([]string(nil), domains...), cidrs: append([]netip.Prefix(nil), cidrs...)}
}

func deny(code verdict.Code, format string, args ...any) verdict.Verdict {
	v := verdict.Denial(verdict.CheckEgress, code, fmt.Sprintf(format, args...))
	v.Phase = verdict.PhaseExecute
	return v
}

func allow(rule string) verdict.Verdict {
	v := verdict.Pass(verdict.CheckEgress).WithRule(rule)
	v.Phase = verdict.PhaseExecute
	return v
}

// CheckHost decides a host name by the domain list. The verdict's Rule is
// the entry that matched. An IP address is refused here: IP targets are
// decided by CheckIP.
func (r *Rules) CheckHost(host string) verdict.Verdict {
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return deny(verdict.EgressIPLiteral, "%s is an IP address, not a host name", host)
	}
	h, err := tripwire.NormalizeHost(host)
	if err != nil {
		return deny(verdict.EgressDomainNotAllowed, "host %q: %v", host, err)
	}
	if tripwire.IsLegacyIP(h) {
		return deny(verdict.EgressIPLiteral, "host %s is a numeric IPv4 form", h)
	}
	for _, d := range r.domains {
		if base, wild := strings.CutPrefix(d, "*."); wild {
			if strings.HasSuffix(h, "."+base) {
				return allow(d)
			}
		} else if h == d {
			return allow(d)
		}
	}
	return deny(verdict.EgressDomainNotAllowed, "host %s is not in ECTO_SANDBOX_ALLOWED_DOMAINS", h)
}

// CheckAddr decides an address a name resolved to: public addresses pass;
// metadata, loopback, private, link-local and the other blocked ranges,
// and addresses carrying one of them (IPv4-mapped, NAT64, 6to4, Teredo,
// …), are refused unless inside an opted-in range. The rules are the
// tripwire's (tripwire.AddrBlocked). The verdict's Rule is "public" or the
// opted-in range.
func (r *Rules) CheckAddr(ip netip.Addr) verdict.Verdict {
	if !ip.IsValid() || ip.Zone() != "" {
		return deny(verdict.EgressAddrBlocked, "address %s is invalid or has an IPv6 zone", ip)
	}
	if inner, p, blocked := tripwire.AddrBlocked(ip, r.cidrs); blocked {
		if inner != ip.Unmap() {
			return deny(verdict.EgressAddrBlocked, "address %s carries %s, in blocked range %s (opt in with ECTO_SANDBOX_EGRESS_ALLOW_CIDRS)", ip, inner, p)
		}
		return deny(verdict.EgressAddrBlocked, "address %s is in blocked range %s (opt in with ECTO_SANDBOX_EGRESS_ALLOW_CIDRS)", ip, p)
	}
	for _, e := range tripwire.Embedded(ip) {
		for _, p := range r.cidrs {
			if p.Contains(e) {
				return allow("cidr:" + p.String())
			}
		}
	}
	return allow("public")
}

// CheckIP decides an IP-literal target: it must lie inside an opted-in
// range, and pass CheckAddr.
func (r *Rules) CheckIP(ip netip.Addr) verdict.Verdict {
	if !tripwire.InRanges(ip, r.cidrs) {
		return deny(verdict.EgressIPLiteral, "IP address %s is not in ECTO_SANDBOX_EGRESS_ALLOW_CIDRS (IP targets are only dialled inside opted-in ranges)", ip)
	}
	return r.CheckAddr(ip)
}
