package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/verdict"
)

// External drives a session whose intents come from outside IronVise — an
// agent that submits them one at a time through the API's intents endpoint
// (docs/design/api.md#intents) — with the same checks, commit, sandbox and
// observation as the loop, and the loop's limits
// (docs/design/checks.md#check-order, docs/design/agent.md#agent-loop): the
// step limit, the consecutive-denial circuit breakers, loop detection, the
// lost guard and observation-rule aborts end the session, and later
// submissions are refused with ErrClosed.
//
// Submissions are processed one at a time; the caller orders them.
type External struct {
	s     *Session
	lim   Limits
	guard GuardStatus
	// complete runs after a committed complete action ended the session
	// completed, before anything seals it: the issuer's verifiable
	// credential is appended there.
	complete func(ctx context.Context) error

	mu    sync.Mutex // guards the fields below
	st    loopState
	out   Outcome
	ended *Stop
}

// Stop says how and why a session ended.
type Stop struct {
	Status ledger.Status
	// Code is the halt or circuit-breaker code, or "complete".
	Code    string
	Message string
}

// ExternalOptions configure NewExternal.
type ExternalOptions struct {
	Limits Limits
	// Guard, when set, is asked after every step whether the guard worker
	// was lost for good.
	Guard GuardStatus
	// Complete, when set, runs after a committed complete action has ended
	// the session completed (so the credential states "completed").
	Complete func(ctx context.Context) error
	// StartStep is the number of steps already taken (0 for a new session).
	StartStep int
}

// NewExternal prepares s for submitted intents.
func NewExternal(s *Session, o ExternalOptions) *External {
	e := &External{s: s, lim: o.Limits.withDefaults(), guard: o.Guard, complete: o.Complete}
	e.st.Step = o.StartStep
	e.out = Outcome{SessionID: s.ID.String(), DeniedBy: map[verdict.Check]int{}}
	return e
}

// PromptScan runs the prompt scan on the session's goal once, before any
// intent (docs/design/checks.md#prompt-scan), and records its verdict. A
// denial ends the session aborted and is returned as the Stop.
func (e *External) PromptScan(ctx context.Context) (verdict.Verdict, *Stop, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	pv := e.s.env.Scanner.ScanGoal(e.s.Goal)
	if err := e.s.appendVerdictTimed(ctx, 0, "", checkTimed(pv)); err != nil {
		return pv, nil, err
	}
	if pv.Denied() {
		stop := &Stop{ledger.StatusAborted, string(pv.Code), pv.Message}
		return pv, stop, e.endLocked(ctx, stop)
	}
	e.s.AddFlags(pv.Flags...)
	e.st.Flags = appendUnique(e.st.Flags, pv.Flags...)
	return pv, nil, nil
}

// Ended returns how the session ended, or nil while it runs.
func (e *External) Ended() *Stop {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended
}

// Submit checks, commits, executes and observes one submitted intent (raw is
// the request body as received), then applies the stop conditions. It
// returns ErrClosed when the session already ended. The Stop is non-nil when
// this intent ended the session; the session's end is then recorded (status,
// and the halt or circuit-breaker event where the loop writes one).
func (e *External) Submit(ctx context.Context, raw string) (*StepResult, *Stop, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended != nil {
		return nil, nil, ErrClosed
	}
	e.st.Step++
	res, err := e.s.Step(ctx, e.st.Step, raw, SourceAPI)
	if err != nil {
		if errors.Is(err, ledger.ErrGoalMismatch) {
			stop := &Stop{ledger.StatusAborted, string(verdict.HaltGoalMismatch), err.Error()}
			e.ended = stop
			return res, stop, nil
		}
		if errors.Is(err, ledger.ErrSealed) {
			// Sealed meanwhile (by another request or instance): the
			// chain is closed for good.
			e.ended = &Stop{ledger.StatusCompleted, "sealed", "the session was sealed"}
		}
		return res, nil, err
	}
	e.s.account(&e.st, res, &e.out)
	stop, err := e.after(ctx, res)
	if err != nil {
		return res, nil, err
	}
	if stop != nil {
		if err := e.endLocked(ctx, stop); err != nil {
			return res, stop, err
		}
		// The credential is issued once the session has ended completed,
		// as the loop does (Run): issued before, it stated "running".
		if res.Completed && stop.Status == ledger.StatusCompleted && e.complete != nil {
			if err := e.complete(ctx); err != nil {
				return res, stop, fmt.Errorf("complete session: %w", err)
			}
		}
	}
	return res, stop, nil
}

// after applies the loop's stop conditions, then the step limit: in the
// loop the limit is checked before proposing the next step, here the session
// ends as soon as the last allowed step is used.
func (e *External) after(ctx context.Context, res *StepResult) (*Stop, error) {
	es, err := e.s.afterStep(ctx, RunOptions{Guard: e.guard}, e.lim, &e.st, res)
	if err != nil || es != nil {
		if es == nil {
			return nil, err
		}
		return &Stop{es.status, es.code, es.message}, err
	}
	if e.st.Step >= e.lim.MaxSteps {
		es, err := e.s.halt(ctx, &e.st, verdict.HaltMaxSteps, fmt.Sprintf("step limit %d", e.lim.MaxSteps), e.lim.MaxSteps, ledger.StatusFailed)
		if err != nil {
			return nil, err
		}
		return &Stop{es.status, es.code, es.message}, nil
	}
	return nil, nil
}

// Interrupt ends a running session aborted with halt_interrupted (server
// shutdown, docs/design/agent.md#agent-loop). It is a no-op on an ended
// session.
func (e *External) Interrupt(ctx context.Context, message string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended != nil {
		return nil
	}
	es, err := e.s.halt(ctx, &e.st, verdict.HaltInterrupted, message, 1, ledger.StatusAborted)
	if err != nil {
		return err
	}
	return e.endLocked(ctx, &Stop{es.status, es.code, es.message})
}

// endLocked records the end of the session. e.mu must be held.
func (e *External) endLocked(ctx context.Context, stop *Stop) error {
	e.ended = stop
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := e.s.env.Ledger.EndSession(wctx, e.s.ID, stop.Status); err != nil && !errors.Is(err, ledger.ErrNotRunning) {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}
