package check

import (
	"context"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

// TestNoGuard: what the guard step records when no guard runs.
func TestNoGuard(t *testing.T) {
	tw := newTripwire(t)
	cases := []struct {
		name         string
		unconfigured bool
		require      bool
		decision     verdict.Decision
		code         verdict.Code
	}{
		{"turned off", false, false, verdict.Skip, verdict.GuardDisabled},
		{"not configured", true, false, verdict.Skip, verdict.GuardNotConfigured},
		{"required, not configured", true, true, verdict.Deny, verdict.GuardNotConfigured},
		{"required, turned off", false, true, verdict.Deny, verdict.GuardNotConfigured},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pipeline{Tripwire: tw, GuardDisabled: "no guard configured", GuardUnconfigured: tc.unconfigured, RequireGuard: tc.require}
			r := p.Run(context.Background(), Input{Raw: rcLS, Step: 1})
			last := r.Verdicts[len(r.Verdicts)-1]
			if last.Check != verdict.CheckGuard || last.Decision != tc.decision || last.Code != tc.code {
				t.Fatalf("guard verdict %s %s %s; want %s %s", last.Check, last.Decision, last.Code, tc.decision, tc.code)
			}
			if r.Allowed() != (tc.decision != verdict.Deny) {
				t.Fatalf("allowed = %v with a %s guard verdict", r.Allowed(), tc.decision)
			}
		})
	}
	// A configured guard runs whatever RequireGuard says.
	g := &fixedGuard{v: verdict.New(verdict.CheckGuard, verdict.Allow, verdict.GuardAllow, "ALLOW")}
	p := &Pipeline{Tripwire: tw, Guard: g, RequireGuard: true}
	if r := p.Run(context.Background(), Input{Raw: rcLS, Step: 1}); !r.Allowed() || r.Decisive.Code != verdict.GuardAllow {
		t.Fatalf("configured guard: %+v", r.Decisive)
	}
}
