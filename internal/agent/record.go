package agent

import (
	"context"
	"fmt"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/verdict"
)

// recorder appends a step's records to the ledger as the pipeline produces
// them (it implements check.Sink).
type recorder struct {
	s        *Session
	step     int
	intentID string
	src      Source
	call     *LLMCall
	// intent is the staged intent_proposed; err is the first record that
	// could not be staged (an encoding failure).
	intent *seqRef
	err    error
	// rctx is the step's record context, which outlives an interrupt and
	// has no deadline: each write takes its own (Session.append).
	rctx context.Context
}

// Proposed implements check.Sink.
func (r *recorder) Proposed(_ context.Context, raw string, in *intent.Intent) error {
	stored, cut := truncateRaw(raw)
	p := intentProposedEvent{
		Step: r.step, Raw: stored, RawTruncated: cut, RawSHA256: sha256Hex(raw),
		IntentID: r.intentID, Source: string(r.src), LLM: r.call,
	}
	if in != nil {
		p.Intent = in
	}
	ref, err := r.s.stageRecord(ledger.TypeIntentProposed, p, nil)
	if err != nil {
		return fmt.Errorf("append intent_proposed: %w", err)
	}
	r.intent = ref
	return nil
}

// Verdict implements check.Sink. The verdict is staged: it commits with
// the step's action, or with the step's end when it was denied.
func (r *recorder) Verdict(_ context.Context, t check.Timed) error {
	if err := r.s.stageVerdictTimed(r.step, r.intentID, t); err != nil && r.err == nil {
		r.err = err
	}
	return nil
}

// ApprovalRequired implements check.Sink. The request, and everything the
// step staged before it, commits before the pipeline waits: an approver
// reads it from the ledger.
func (r *recorder) ApprovalRequired(_ context.Context, req check.ApprovalRequest) error {
	if _, err := r.s.append(r.rctx, ledger.TypeApprovalRequired, req); err != nil {
		return fmt.Errorf("append approval_required: %w", err)
	}
	return nil
}

// ApprovalDecided implements check.Sink.
func (r *recorder) ApprovalDecided(_ context.Context, d check.ApprovalDecision) error {
	if _, err := r.s.stageRecord(ledger.TypeApprovalDecision, d, nil); err != nil {
		return fmt.Errorf("append approval_decision: %w", err)
	}
	return nil
}

// verdictEvent is the check_verdict payload of a verdict of step.
func verdictEvent(step int, intentID string, t check.Timed) checkVerdictEvent {
	id := &intentID
	if t.Check == verdict.CheckPromptScan {
		id = nil
	}
	return checkVerdictEvent{
		Step: step, Check: t.Check, Phase: t.Phase, Decision: t.Decision, Code: t.Code, Message: t.Message,
		Rule: t.Rule, Flags: t.Flags, Gates: t.Gates, DurationUS: t.DurationMicros, IntentID: id,
	}
}

// notifyDeny hands a committed deny verdict to the notifier.
func (s *Session) notifyDeny(t check.Timed) func(ledger.Event) {
	if t.Decision != verdict.Deny {
		return nil
	}
	return s.Notify
}

// appendVerdictTimed records a verdict at once (the goal's prompt scan).
func (s *Session) appendVerdictTimed(ctx context.Context, step int, intentID string, t check.Timed) error {
	ev, err := s.append(ctx, ledger.TypeCheckVerdict, verdictEvent(step, intentID, t))
	if err != nil {
		return fmt.Errorf("append check_verdict: %w", err)
	}
	if f := s.notifyDeny(t); f != nil {
		f(ev)
	}
	return nil
}

// stageVerdictTimed stages a verdict of a step for the step's next commit.
func (s *Session) stageVerdictTimed(step int, intentID string, t check.Timed) error {
	if _, err := s.stageRecord(ledger.TypeCheckVerdict, verdictEvent(step, intentID, t), s.notifyDeny(t)); err != nil {
		return fmt.Errorf("append check_verdict: %w", err)
	}
	return nil
}

// stageVerdict stages an execute-phase verdict of a step.
func (s *Session) stageVerdict(res *StepResult, v verdict.Verdict) error {
	return s.stageVerdictTimed(res.Step, res.IntentID, check.Timed{Verdict: v})
}
