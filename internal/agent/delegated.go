package agent

import (
	"context"
	"fmt"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Delegated steps: an agent that runs its own tools (Claude Code, Codex)
// asks IronVise through a hook before each tool call. IronVise checks and
// records the intent exactly as for a step it executes, commits the action
// when every check allowed it, and stops there: the agent runs the tool.
// What the tool returned comes back later (the agent's post-tool event)
// and is recorded as the action's observation by ObserveDelegated.

// ExecutedByAgent is the action event's executed_by of a delegated step.
const ExecutedByAgent = ledger.ExecutedByAgent

// SourceHook marks an intent built from an agent's hook event.
const SourceHook Source = "hook"

// Decide checks, records and (when allowed) commits one intent without
// executing it. The action is the agent's to run. An error is returned
// only when the ledger cannot be written; the caller must then block the
// tool call.
func (s *Session) Decide(ctx context.Context, step int, raw string) (*StepResult, error) {
	return s.runStep(ctx, step, raw, SourceHook, nil, true)
}

// ObserveDelegated scans what the agent's tool returned for the action
// committed at actionSeq in step, and records it as the action's
// observation (credentials redacted, injection attempts labelled). The
// observation is not evidence for findings: IronVise did not run the
// action (ledger.ExecutedObservation needs a sandbox_result for a command,
// and write_file is not an executing action).
func (s *Session) ObserveDelegated(ctx context.Context, step int, actionSeq uint64, output string) (*StepResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := &StepResult{Step: step, ActionSeq: actionSeq}
	if err := s.observe(res, output); err != nil {
		s.dropStaged()
		return nil, err
	}
	if _, err := s.flush(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("record the observation of step %d: %w", step, err)
	}
	return res, nil
}
