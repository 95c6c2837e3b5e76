// The prober's fixtures include a UDP socket, which Wine (the Windows
// test runner here) refuses (wsaioctl error 10045); the Windows tier's own
// answer to proxy mode is tested in internal/sandbox/native.

//go:build !windows

package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// egressTier answers every Run with a fixed result, recording whether the
// request was in proxy mode.
type egressTier struct {
	fakeTier
	result  Result
	proxied bool
}

func (e *egressTier) Run(_ context.Context, req Request) Result {
	e.proxied = req.Egress != nil
	return e.result
}

// TestProxyProbeStates: net_proxy_only is not applicable on a tier that
// refuses proxy-mode runs, and not enforced on one that runs them without
// proxy mode (ignoring Request.Egress).
func TestProxyProbeStates(t *testing.T) {
	cases := []struct {
		name   string
		result Result
		want   State
		ev     string
	}{
		{"refused", Aborted(TierNativeDarwin, "proxy mode is not supported on this tier yet", time.Millisecond), StateNotApplicable, "refused (fails closed)"},
		{"ignored", Result{Status: StatusOK, Enforced: &Enforced{Network: "none"}}, StateNotEnforced, `with network "none"`},
		{"no findings", Result{Status: StatusOK, Enforced: &Enforced{Network: "proxy"}}, StateNotEnforced, "stopped early"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tier := &egressTier{result: tc.result}
			p, err := newProber(tier)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			g := p.proxyProbe(context.Background())
			if !tier.proxied || g.Name != GNetProxyOnly || g.State != tc.want || !strings.Contains(g.Evidence, tc.ev) {
				t.Fatalf("proxy mode %v, guarantee %+v", tier.proxied, g)
			}
		})
	}
}
