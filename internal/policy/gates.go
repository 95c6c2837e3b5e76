package policy

import (
	"slices"
	"time"

	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// ApprovalRequest is the one approval request that covers every gate a
// step triggered (docs/design/checks.md#approval-gates): what the approval
// step opens and records in approval_required. Its fields are laid out like
// check.GateRequest, so one converts to the other with a plain type
// conversion.
type ApprovalRequest struct {
	// Gates are the ids of the triggered gates: those the policy verdict
	// named, then those whose when is true, in file order.
	Gates []string
	// Reasons has one entry per gate, in the same order: the gate's reason,
	// or what triggered it.
	Reasons []string
	// TimeoutSeconds is the minimum over the triggered gates.
	TimeoutSeconds int
	// OnTimeout is "allow" only if every triggered gate says allow, else
	// "deny" (the values of the OnTimeout constants).
	OnTimeout string
}

// Timeout returns TimeoutSeconds as a duration.
func (r *ApprovalRequest) Timeout() time.Duration {
	return time.Duration(r.TimeoutSeconds) * time.Second
}

// TriggeredGates collects the gates of a step once the tripwire has
// allowed it: the gates named by the policy verdict pv (when it is
// require_approval), then every gate whose when is true for the view, in
// file order, each once. ok is false when no gate triggered (approval does
// not run) or when pv denies (the step never reaches approval).
func (p *Policy) TriggeredGates(v *tripwire.View, pv verdict.Verdict) (req ApprovalRequest, ok bool) {
	if p == nil || pv.Denied() {
		return ApprovalRequest{}, false
	}
	req.OnTimeout = string(OnTimeoutAllow)
	add := func(g Gate, reason string) {
		if slices.Contains(req.Gates, g.ID) {
			return
		}
		if g.Reason != "" {
			reason = g.Reason
		}
		req.Gates = append(req.Gates, g.ID)
		req.Reasons = append(req.Reasons, reason)
		if len(req.Gates) == 1 || g.TimeoutSeconds < req.TimeoutSeconds {
			req.TimeoutSeconds = g.TimeoutSeconds
		}
		// One gate that denies on timeout makes the whole request deny.
		if g.OnTimeout != OnTimeoutAllow {
			req.OnTimeout = string(OnTimeoutDeny)
		}
	}
	if pv.Decision == verdict.RequireApproval {
		ids := pv.Gates
		if len(ids) == 0 {
			ids = []string{DefaultGateID}
		}
		for _, id := range ids {
			g, known := p.Gate(id)
			if !known {
				// A verdict naming a gate this policy lacks was not made by
				// it; still ask, with the strictest defaults.
				g = Gate{ID: id, TimeoutSeconds: p.approvalTTL, OnTimeout: OnTimeoutDeny}
			}
			add(g, pv.Message)
		}
	}
	if v != nil {
		for _, g := range p.gates {
			if g.when != nil && !slices.Contains(req.Gates, g.ID) && g.when.eval(p, v) {
				add(g, "when "+g.When)
			}
		}
	}
	if len(req.Gates) == 0 {
		return ApprovalRequest{}, false
	}
	return req, true
}
