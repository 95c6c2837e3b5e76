package check

import (
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// PolicyCheck adapts a loaded policy to the pipeline. A nil policy gives a
// nil Policy: no policy loaded.
func PolicyCheck(p *policy.Policy) Policy {
	if p == nil {
		return nil
	}
	return policyAdapter{p}
}

type policyAdapter struct{ p *policy.Policy }

func (a policyAdapter) Evaluate(v *tripwire.View) verdict.Verdict { return a.p.Evaluate(v) }

func (a policyAdapter) TriggeredGates(v *tripwire.View, pv verdict.Verdict) (GateRequest, bool) {
	req, ok := a.p.TriggeredGates(v, pv)
	return GateRequest(req), ok
}
