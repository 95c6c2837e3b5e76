package session

import (
	"fmt"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/policy"
)

// EgressRules composes the sandbox network of a session: the configured
// network (ECTO_SANDBOX_NETWORK, ECTO_SANDBOX_ALLOWED_DOMAINS,
// ECTO_SANDBOX_EGRESS_ALLOW_CIDRS) narrowed by the policy's [network]
// section. nil rules mean commands get no network. A policy can only take
// network away; one that asks for more than the configuration gives (a
// host outside the configured list, or the proxy when the configuration
// has none) is an error naming the entry, so the session does not start
// with a list other than the one its policy states. A zero n (a runtime
// that runs no command itself, such as an agent hook's) gives no network
// and checks nothing.
func EgressRules(n config.Network, p *policy.Policy) (*egress.Rules, error) {
	pn, has := p.Network()
	switch {
	case n.Mode == "":
		return nil, nil
	case has && pn.Mode == policy.NetworkModeNone:
		return nil, nil
	case !n.Proxy():
		if has && (pn.Mode == policy.NetworkModeProxy || len(pn.AllowedDomains) > 0) {
			return nil, fmt.Errorf("policy %s: [network] asks for the egress proxy, but ECTO_SANDBOX_NETWORK is %q: set ECTO_SANDBOX_NETWORK=proxy with the hosts in ECTO_SANDBOX_ALLOWED_DOMAINS, or set mode = \"none\" in the policy", p.File(), n.Mode)
		}
		return nil, nil
	}
	r := egress.NewRules(n.AllowedDomains, n.AllowCIDRs)
	if has && pn.Narrowed {
		nr, err := r.Narrow(pn.AllowedDomains)
		if err != nil {
			return nil, fmt.Errorf("policy %s: [network] %w", p.File(), err)
		}
		r = nr
	}
	return r, nil
}

// sessionNetwork is what the genesis records of the network rules (nil
// when the runtime has no network configuration).
func sessionNetwork(n config.Network, p *policy.Policy, r *egress.Rules) *ledger.SessionNetwork {
	if n.Mode == "" {
		return nil
	}
	pn, has := p.Network()
	sn := &ledger.SessionNetwork{Mode: config.NetworkNone, AllowedDomains: []string{}, AllowCIDRs: []string{},
		NarrowedByPolicy: has && (pn.Mode == policy.NetworkModeNone && n.Proxy() || pn.Narrowed)}
	if r != nil {
		sn.Mode = config.NetworkProxy
		sn.AllowedDomains = r.Domains()
		for _, c := range r.CIDRs() {
			sn.AllowCIDRs = append(sn.AllowCIDRs, c.String())
		}
	}
	return sn
}
