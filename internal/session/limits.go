package session

import (
	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/policy"
)

// Limits computes the effective limits of a session. The step limit is the
// smaller of the policy's max_steps and the operator's limit when both are
// set, whichever is set otherwise, and config.DefaultMaxSteps when neither
// is: a policy can lower the operator's limit but never raise it. The
// operator's limit is steps when stepsSet (a flag of the front end), else
// AGENT_MAX_STEPS when set. The other limits come from the configuration.
func Limits(ac config.Agent, pol *policy.Policy, steps int, stepsSet bool) agent.Limits {
	op, opSet := 0, false
	switch {
	case stepsSet:
		op, opSet = steps, true
	case ac.MaxStepsSet:
		op, opSet = ac.MaxSteps, true
	}
	maxSteps := config.DefaultMaxSteps
	pmax, pset := 0, false
	if pol != nil {
		pmax, pset = pol.MaxSteps()
	}
	switch {
	case opSet && pset:
		maxSteps = min(op, pmax)
	case opSet:
		maxSteps = op
	case pset:
		maxSteps = pmax
	}
	return agent.Limits{
		MaxSteps: maxSteps, LLMErrorLimit: ac.LLMErrorLimit, CheckDenialLimit: ac.CheckDenialLimit,
		JustificationFailureLimit: ac.JustificationFailureLimit, GuardDenialLimit: ac.GuardDenialLimit,
		TokenBudget: ac.TokenBudget, SnapshotInterval: ac.SnapshotInterval, KeyRotationSteps: ac.KeyRotationSteps,
	}
}
