package policy_test

import (
	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// checkPolicy shows how the composition root plugs a *policy.Policy into
// the pipeline: ApprovalRequest has the field layout of check.GateRequest,
// so the adapter is a type conversion. This file fails to compile if the
// two drift apart.
type checkPolicy struct{ *policy.Policy }

func (c checkPolicy) TriggeredGates(v *tripwire.View, pv verdict.Verdict) (check.GateRequest, bool) {
	req, ok := c.Policy.TriggeredGates(v, pv)
	return check.GateRequest(req), ok
}

var _ check.Policy = checkPolicy{}
