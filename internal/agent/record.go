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
	s         *Session
	step      int
	intentID  string
	src       Source
	call      *LLMCall
	intentSeq uint64
	// rctx is the step's record context, which outlives an interrupt and
	// has no deadline: each write takes its own (Session.append).
	rctx context.Context
}

// Proposed implements check.Sink.
func (r *recorder) Proposed(_ context.Context, raw string, in *intent.Intent) error {
	ctx := r.rctx
	stored, cut := truncateRaw(raw)
	p := intentProposedEvent{
		Step: r.step, Raw: stored, RawTruncated: cut, RawSHA256: sha256Hex(raw),
		IntentID: r.intentID, Source: string(r.src), LLM: r.call,
	}
	if in != nil {
		p.Intent = in
	}
	ev, err := r.s.append(ctx, ledger.TypeIntentProposed, p)
	if err != nil {
		return fmt.Errorf("append intent_proposed: %w", err)
	}
	r.intentSeq = ev.Seq
	return nil
}

// Verdict implements check.Sink.
func (r *recorder) Verdict(_ context.Context, t check.Timed) error {
	return r.s.appendVerdictTimed(r.rctx, r.step, r.intentID, t)
}

// ApprovalRequired implements check.Sink.
func (r *recorder) ApprovalRequired(_ context.Context, req check.ApprovalRequest) error {
	if _, err := r.s.append(r.rctx, ledger.TypeApprovalRequired, req); err != nil {
		return fmt.Errorf("append approval_required: %w", err)
	}
	return nil
}

// ApprovalDecided implements check.Sink.
func (r *recorder) ApprovalDecided(_ context.Context, d check.ApprovalDecision) error {
	if _, err := r.s.append(r.rctx, ledger.TypeApprovalDecision, d); err != nil {
		return fmt.Errorf("append approval_decision: %w", err)
	}
	return nil
}

func (s *Session) appendVerdictTimed(ctx context.Context, step int, intentID string, t check.Timed) error {
	id := &intentID
	if t.Check == verdict.CheckPromptScan {
		id = nil
	}
	ev, err := s.append(ctx, ledger.TypeCheckVerdict, checkVerdictEvent{
		Step: step, Check: t.Check, Phase: t.Phase, Decision: t.Decision, Code: t.Code, Message: t.Message,
		Rule: t.Rule, Flags: t.Flags, Gates: t.Gates, DurationUS: t.DurationMicros, IntentID: id,
	})
	if err != nil {
		return fmt.Errorf("append check_verdict: %w", err)
	}
	if t.Decision == verdict.Deny {
		s.Notify(ev)
	}
	return nil
}

// appendVerdict records an execute-phase verdict of a step.
func (s *Session) appendVerdict(ctx context.Context, res *StepResult, v verdict.Verdict) error {
	return s.appendVerdictTimed(ctx, res.Step, res.IntentID, check.Timed{Verdict: v})
}
