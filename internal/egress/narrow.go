package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/ironvise/ironvise/internal/tripwire"
)

// ErrWiden reports a narrowing entry that the configured list does not
// cover: a policy may only take hosts away from ECTO_SANDBOX_ALLOWED_DOMAINS,
// never add one.
var ErrWiden = errors.New("ironvise/egress: entry is not covered by ECTO_SANDBOX_ALLOWED_DOMAINS")

// Narrow returns rules that allow only the hosts of domains that r already
// allows, with r's opted-in address ranges. It is how a policy's [network]
// allowed_domains takes effect: the list can narrow the operator's list,
// never widen it, so a policy file cannot open a host the operator did not.
//
// An exact name is kept when r.CheckHost allows it; "*.x" is kept only when
// a wildcard of r covers every name below x ("*.x" itself, or "*.y" with x
// ending in ".y"): an exact entry of r never covers a wildcard. An entry
// that is not covered, or not a host name, is an error (wrapping ErrWiden
// for the former) that names it: the session must not start with a list
// other than the one its policy states. An empty domains allows no host
// (only IP targets inside the opted-in ranges, as with r).
func (r *Rules) Narrow(domains []string) (*Rules, error) {
	out := &Rules{domains: []string{}, cidrs: slices.Clone(r.cidrs)}
	for _, raw := range domains {
		e, err := normalizeEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("egress: allowed_domains entry %q: %w", raw, err)
		}
		if base, wild := strings.CutPrefix(e, "*."); wild {
			if !r.coversWildcard(base) {
				return nil, fmt.Errorf("%w: allowed_domains entry %q allows every name below %s, which the configured list (%s) does not; a policy can only narrow the list: add %q to ECTO_SANDBOX_ALLOWED_DOMAINS or remove the entry",
					ErrWiden, raw, base, r.listText(), e)
			}
		} else if v := r.CheckHost(e); v.Denied() {
			return nil, fmt.Errorf("%w: allowed_domains entry %q is not allowed by the configured list (%s); a policy can only narrow the list: add it to ECTO_SANDBOX_ALLOWED_DOMAINS or remove the entry",
				ErrWiden, raw, r.listText())
		}
		if !slices.Contains(out.domains, e) {
			out.domains = append(out.domains, e)
		}
	}
	return out, nil
}

// coversWildcard reports whether a wildcard of r allows every name below
// base.
func (r *Rules) coversWildcard(base string) bool {
	for _, d := range r.domains {
		if b, wild := strings.CutPrefix(d, "*."); wild && (base == b || strings.HasSuffix(base, "."+b)) {
			return true
		}
	}
	return false
}

func (r *Rules) listText() string {
	if len(r.domains) == 0 {
		return "empty"
	}
	return strings.Join(r.domains, ",")
}

// normalizeEntry validates and normalises one domain entry as ParseDomains
// does (lowercase, no trailing dot, IDNA).
func normalizeEntry(e string) (string, error) {
	e = strings.TrimSpace(e)
	name, wild := strings.CutPrefix(e, "*.")
	switch {
	case e == "":
		return "", errors.New("empty entry")
	case e == "*" || name == "":
		return "", errors.New("a bare wildcard would allow every host")
	case strings.Contains(name, "*"):
		return "", errors.New("a wildcard is allowed only as a leading \"*.\"")
	case strings.ContainsAny(name, "[]/@: \t"):
		return "", errors.New("not a host name (write a host name without scheme, port or path)")
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "", errors.New("an IP address; list address ranges in ECTO_SANDBOX_EGRESS_ALLOW_CIDRS")
	}
	n, err := tripwire.NormalizeHost(name)
	if err != nil {
		return "", err
	}
	if tripwire.IsLegacyIP(n) {
		return "", errors.New("a numeric IPv4 form; list address ranges in ECTO_SANDBOX_EGRESS_ALLOW_CIDRS")
	}
	if wild {
		n = "*." + n
	}
	return n, nil
}

// Domains returns the allowed domain entries, normalised, in order: what a
// session's genesis records as its effective allow list.
func (r *Rules) Domains() []string { return slices.Clone(r.domains) }

// CIDRs returns the opted-in address ranges, in order.
func (r *Rules) CIDRs() []netip.Prefix { return slices.Clone(r.cidrs) }
