// Package check runs the check pipeline on one proposed intent: schema →
// policy → tripwire → approval → guard (docs/design/checks.md#check-order),
// and returns every verdict in order with the one that decided.
//
// # Contract
//
// The first denial stops evaluation; checks not reached record nothing.
// A check that fails internally denies (fail closed): a panic inside a
// check becomes a deny with code check_internal_error, never an allow.
// The pipeline executes nothing: committing and running the action are the
// caller's job, after an allowed Result.
//
// # Usage
//
//	p := &check.Pipeline{Tripwire: tw, Policy: pol, Guard: nil, GuardDisabled: "no guard configured"}
//	res := p.Run(ctx, check.Input{Raw: modelText, Step: 3})
//	if !res.Allowed() { fmt.Println(res.Decisive.Code, res.Decisive.Message) }
//
// # Limitations
//
// The guard and the approval channel are interfaces filled by the agent
// loop and the server; with none, the guard records skip and approval
// resolves at once as a timeout decided by no_approver.
package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Policy is check 2 as the pipeline uses it. A nil Policy in the Pipeline
// means no policy is loaded: the check still runs and records allow.
type Policy interface {
	// Evaluate returns allow, deny or require_approval for a view.
	Evaluate(v *tripwire.View) verdict.Verdict
	// TriggeredGates collects the approval gates for a view the tripwire
	// allowed, given the policy's verdict
	// (docs/design/checks.md#approval-gates). ok is false when no gate is
	// triggered.
	TriggeredGates(v *tripwire.View, policyVerdict verdict.Verdict) (req GateRequest, ok bool)
}

// GateRequest is the single approval request covering every triggered gate.
type GateRequest struct {
	Gates          []string
	Reasons        []string
	TimeoutSeconds int
	// OnTimeout is "allow" only when every triggered gate says allow.
	OnTimeout string
}

// Guard is check 4, the second LLM that reviews intents that passed the
// deterministic checks. Implementations must deny on any error.
type Guard interface {
	Review(ctx context.Context, req GuardRequest) verdict.Verdict
}

// GuardRequest is what the guard sees: never observations.
type GuardRequest struct {
	SessionID string
	Step      int
	Goal      string
	Intent    *intent.Intent
	// Flags are the deterministic flags of this step and of earlier steps
	// of the session (docs/design/checks.md#flags).
	Flags []string
}

// Approver decides an approval request (docs/design/checks.md#approval-gates
// channels). It must return within the request's timeout; a nil Approver
// means no approver.
type Approver interface {
	Decide(ctx context.Context, req ApprovalRequest) ApprovalDecision
}

// ApprovalRequest is one approval request as recorded in approval_required.
type ApprovalRequest struct {
	Step                int      `json:"step"`
	GateID              string   `json:"gate_id"`
	Gates               []string `json:"gates"`
	Reasons             []string `json:"reasons"`
	ActionName          string   `json:"action_name"`
	ActionParamsSummary string   `json:"action_params_summary"`
	TimeoutSeconds      int      `json:"timeout_seconds"`
	OnTimeout           string   `json:"on_timeout"`
}

// ApprovalDecision is the outcome recorded in approval_decision.
type ApprovalDecision struct {
	Step     int    `json:"step"`
	GateID   string `json:"gate_id"`
	Approved bool   `json:"approved"`
	// DecidedBy is operator:cli, operator:api:<label>, timeout or
	// no_approver.
	DecidedBy string  `json:"decided_by"`
	Reason    *string `json:"reason"`
	// TimedOut marks a decision reached by the timeout (or no approver).
	TimedOut bool `json:"-"`
}

// Decided-by values of docs/design/checks.md#check-events.
const (
	DecidedByTimeout    = "timeout"
	DecidedByNoApprover = "no_approver"
	DecidedByCLI        = "operator:cli"
)

// Sink receives the records of a step as they happen, so that the caller
// can append them to the ledger in order — in particular approval_required
// before the pipeline waits for the decision. An error from the sink stops
// the pipeline with a denial: what cannot be recorded does not run.
type Sink interface {
	// Proposed is called once the schema check parsed (or failed to parse)
	// the reply, before its verdict; in is nil when parsing failed.
	Proposed(ctx context.Context, raw string, in *intent.Intent) error
	// Verdict is called for every check that ran, in order.
	Verdict(ctx context.Context, v Timed) error
	// ApprovalRequired is called when an approval request opens, before
	// the approver is asked.
	ApprovalRequired(ctx context.Context, req ApprovalRequest) error
	// ApprovalDecided is called with the decision, before the approval
	// verdict.
	ApprovalDecided(ctx context.Context, d ApprovalDecision) error
}

// Pipeline holds the checks of one session. Fields are read-only once Run
// is called; a Pipeline is safe for concurrent use if its parts are.
type Pipeline struct {
	Tripwire *tripwire.Tripwire
	Policy   Policy
	// Guard is nil when the guard is disabled; GuardDisabled is then the
	// message of the skip verdict (GUARD_REQUIRED is false, --no-guard, or
	// no guard configured).
	Guard         Guard
	GuardDisabled string
	// GuardUnconfigured reports that Guard is nil because no guard is
	// configured although none was turned off: the guard step records
	// guard_not_configured (a skip) instead of guard_disabled, so that the
	// caller can tell that no guard ran.
	GuardUnconfigured bool
	// RequireGuard denies the step, with guard_not_configured, when Guard
	// is nil: no guard can run and the caller asked for one.
	RequireGuard bool
	Approver     Approver
	// Observations resolves findings evidence for complete.
	Observations intent.Observations
	// NoWrite makes the schema check refuse write_file: set it where
	// IronVise itself would have to execute the intent (intent.Options).
	NoWrite bool
	// Sink, when set, receives every record as it happens.
	Sink Sink
	// Reviewing, when set, receives the intent once every check before
	// the guard allowed it (schema, policy, tripwire and an approval the
	// policy asked for), as the guard starts its review: the agent starts
	// confining a command there, which starts only if the guard allows it
	// too. Not sooner: an approval can take hours, and nothing is held
	// for it. It must not block.
	Reviewing func(*intent.Intent)
	// Now defaults to time.Now; tests pin it.
	Now func() time.Time
}

// Input is one step's proposal.
type Input struct {
	SessionID string
	Step      int
	Goal      string
	// Raw is the model's reply text, checked by the schema check.
	Raw string
	// SessionFlags are flags of earlier steps, forwarded to the guard.
	SessionFlags []string
}

// Timed is a verdict with how long its check took.
type Timed struct {
	verdict.Verdict
	DurationMicros int64 `json:"duration_us"`
}

// Result is the outcome of one Run.
type Result struct {
	// Intent is nil when the schema check denied.
	Intent *intent.Intent
	// View is the shared intent view (nil when the schema check denied).
	View *tripwire.View
	// Verdicts lists the verdict of every check that ran, in order.
	Verdicts []Timed
	// Decisive is the first denial, or the last verdict when all allowed.
	Decisive verdict.Verdict
	// Approval is set when approval ran.
	Approval *ApprovalRequest
	Decision *ApprovalDecision
	// Flags are the flags raised by this step.
	Flags []string
	// RecordErr is set when the Sink failed; the pipeline then stopped
	// with a denial.
	RecordErr error
}

// Allowed reports whether every check allowed (or skipped).
func (r *Result) Allowed() bool { return !r.Decisive.Denied() }

// Run checks one proposal.
func (p *Pipeline) Run(ctx context.Context, in Input) *Result {
	res := &Result{}
	now := p.now
	minJustify := intent.DefaultMinJustify
	if p.Tripwire != nil {
		minJustify = p.Tripwire.Config().MinJustification
	}

	// [1] schema
	var parsed *intent.Intent
	if !p.stepThen(ctx, res, verdict.CheckSchema, 0, func() verdict.Verdict {
		in, err := intent.Parse(in.Raw, intent.Options{MinJustification: minJustify, Observations: p.Observations, NoWrite: p.NoWrite})
		if err != nil {
			var e *intent.Error
			if errors.As(err, &e) {
				return verdict.Denial(verdict.CheckSchema, e.Code, e.Error())
			}
			return verdict.Denial(verdict.CheckSchema, verdict.SchemaNotJSON, err.Error())
		}
		parsed = in
		return verdict.Pass(verdict.CheckSchema)
	}, func() error {
		if p.Sink == nil {
			return nil
		}
		return p.Sink.Proposed(ctx, in.Raw, parsed)
	}) {
		return res
	}
	res.Intent = parsed
	if p.Tripwire == nil {
		// Without a tripwire nothing can be checked: fail closed.
		p.record(ctx, res, verdict.Denial(verdict.CheckTripwire, verdict.CheckInternalError, "no tripwire configured"), 0)
		return res
	}
	start := now()
	res.View = p.Tripwire.View(ctx, parsed)
	viewCost := now().Sub(start)

	// [2] policy
	var policyVerdict verdict.Verdict
	if !p.step(ctx, res, verdict.CheckPolicy, func() verdict.Verdict {
		if p.Policy == nil {
			v := verdict.Pass(verdict.CheckPolicy)
			v.Message = "no policy loaded"
			policyVerdict = v
			return v
		}
		policyVerdict = p.Policy.Evaluate(res.View)
		return policyVerdict
	}) {
		return res
	}

	// [3] tripwire (the view was computed once; its cost is charged here)
	if !p.stepThen(ctx, res, verdict.CheckTripwire, viewCost, func() verdict.Verdict {
		v := p.Tripwire.Check(res.View)
		res.Flags = append(res.Flags, v.Flags...)
		return v
	}, nil) {
		return res
	}

	// [3a] approval
	if p.Policy != nil {
		if gr, ok := p.Policy.TriggeredGates(res.View, policyVerdict); ok {
			if !p.step(ctx, res, verdict.CheckApproval, func() verdict.Verdict {
				return p.approve(ctx, res, in.Step, gr)
			}) {
				return res
			}
		}
	}

	// [4] guard
	if p.Reviewing != nil {
		p.Reviewing(parsed)
	}
	p.step(ctx, res, verdict.CheckGuard, func() verdict.Verdict {
		if p.Guard == nil {
			msg := p.GuardDisabled
			if msg == "" {
				msg = "no guard configured"
			}
			switch {
			case p.RequireGuard:
				// A required guard that cannot run never lets an intent
				// through unreviewed.
				return verdict.Denial(verdict.CheckGuard, verdict.GuardNotConfigured, "a guard is required but none can run: "+msg)
			case p.GuardUnconfigured:
				return verdict.New(verdict.CheckGuard, verdict.Skip, verdict.GuardNotConfigured, msg)
			}
			return verdict.New(verdict.CheckGuard, verdict.Skip, verdict.GuardDisabled, msg)
		}
		flags := append(append([]string(nil), in.SessionFlags...), res.Flags...)
		return p.Guard.Review(ctx, GuardRequest{SessionID: in.SessionID, Step: in.Step, Goal: in.Goal, Intent: parsed, Flags: flags})
	})
	return res
}

func (p *Pipeline) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// step runs one check, records its verdict and reports whether the
// pipeline continues.
func (p *Pipeline) step(ctx context.Context, res *Result, c verdict.Check, f func() verdict.Verdict) bool {
	return p.stepThen(ctx, res, c, 0, f, nil)
}

// stepThen is step with extra time charged to the check and a hook that
// runs between the check and the recording of its verdict.
func (p *Pipeline) stepThen(ctx context.Context, res *Result, c verdict.Check, extra time.Duration, f func() verdict.Verdict, before func() error) bool {
	if res.RecordErr != nil {
		return false
	}
	start := p.now()
	v := safely(c, f)
	d := p.now().Sub(start) + extra
	if before != nil {
		if err := before(); err != nil {
			p.failRecord(res, c, err)
			return false
		}
	}
	p.record(ctx, res, v, d)
	return res.RecordErr == nil && !v.Denied()
}

func (p *Pipeline) record(ctx context.Context, res *Result, v verdict.Verdict, d time.Duration) {
	if v.Phase == "" {
		v.Phase = verdict.PhasePre
	}
	t := Timed{Verdict: v, DurationMicros: d.Microseconds()}
	res.Verdicts = append(res.Verdicts, t)
	res.Decisive = v
	if p.Sink != nil && res.RecordErr == nil {
		if err := p.Sink.Verdict(ctx, t); err != nil {
			p.failRecord(res, v.Check, err)
		}
	}
}

// failRecord stops the step: an intent whose checks cannot be recorded
// must not run.
func (p *Pipeline) failRecord(res *Result, c verdict.Check, err error) {
	res.RecordErr = err
	res.Decisive = verdict.Denial(c, verdict.CheckInternalError, "could not record the step: "+err.Error())
}

// safely turns a panic inside a check into a deny: a bug in a check must
// never let an intent through.
func safely(c verdict.Check, f func() verdict.Verdict) (v verdict.Verdict) {
	defer func() {
		if r := recover(); r != nil {
			v = verdict.Denial(c, verdict.CheckInternalError, fmt.Sprintf("internal error in the %s check: %v", c, r))
		}
	}()
	v = f()
	if v.Check == "" {
		v.Check = c
	}
	return v
}

// approve opens one approval request for the triggered gates and waits for
// its decision.
func (p *Pipeline) approve(ctx context.Context, res *Result, step int, gr GateRequest) verdict.Verdict {
	req := ApprovalRequest{
		Step: step, GateID: uuid.NewString(), Gates: gr.Gates, Reasons: gr.Reasons,
		ActionName: string(res.Intent.Action), ActionParamsSummary: summarize(res.Intent),
		TimeoutSeconds: gr.TimeoutSeconds, OnTimeout: gr.OnTimeout,
	}
	if req.Reasons == nil {
		req.Reasons = []string{}
	}
	res.Approval = &req
	if p.Sink != nil {
		if err := p.Sink.ApprovalRequired(ctx, req); err != nil {
			res.RecordErr = err
			return verdict.Denial(verdict.CheckApproval, verdict.CheckInternalError, "could not record the approval request: "+err.Error())
		}
	}
	var d ApprovalDecision
	if p.Approver == nil {
		// No approver: the request resolves at once as a timeout.
		d = ApprovalDecision{Approved: gr.OnTimeout == "allow", DecidedBy: DecidedByNoApprover, TimedOut: true}
	} else {
		d = p.Approver.Decide(ctx, req)
	}
	d.Step, d.GateID = step, req.GateID
	if d.Reason == nil {
		r := d.DecidedBy
		d.Reason = &r
	}
	res.Decision = &d
	if p.Sink != nil {
		if err := p.Sink.ApprovalDecided(ctx, d); err != nil {
			res.RecordErr = err
			return verdict.Denial(verdict.CheckApproval, verdict.CheckInternalError, "could not record the approval decision: "+err.Error())
		}
	}
	outcome := "rejected"
	code := verdict.ApprovalRejected
	switch {
	case d.Approved:
		outcome, code = "granted", verdict.ApprovalGranted
	case d.TimedOut:
		outcome, code = "timed out", verdict.ApprovalTimeout
	}
	dec := verdict.Deny
	if d.Approved {
		dec = verdict.Allow
	}
	v := verdict.New(verdict.CheckApproval, dec, code, fmt.Sprintf("request %s %s by %s", req.GateID, outcome, d.DecidedBy))
	v.Gates = gr.Gates
	return v
}

// MaxParamsSummary caps action_params_summary
// (docs/design/checks.md#check-events: ≤ 1 KiB).
const MaxParamsSummary = 1024

// summarize is the compact JSON of the intent's params
// (docs/design/api.md#tokens-webhooks-policies), cut to MaxParamsSummary
// bytes at a rune boundary. encoding/json sorts map keys, so the summary is
// stable.
func summarize(in *intent.Intent) string {
	b, err := json.Marshal(in.Params())
	if err != nil {
		// Params are strings and findings only; a failure is a bug, and the
		// approver still needs to see what it is asked about.
		b = []byte(fmt.Sprintf("%q", in.Target()))
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if len(s) > MaxParamsSummary {
		cut := MaxParamsSummary
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut]
	}
	return s
}
