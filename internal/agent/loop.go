package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Limits bound one run (docs/design/agent.md#agent-loop,
// docs/design/checks.md#check-order). Zero values select the documented
// defaults, except TokenBudget and KeyRotationSteps where zero means off.
type Limits struct {
	MaxSteps                  int
	LLMErrorLimit             int
	CheckDenialLimit          int
	JustificationFailureLimit int
	GuardDenialLimit          int
	TokenBudget               int
	SnapshotInterval          int
	KeyRotationSteps          int
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxSteps, 20)
	def(&l.LLMErrorLimit, 5)
	def(&l.CheckDenialLimit, 5)
	def(&l.JustificationFailureLimit, 3)
	def(&l.GuardDenialLimit, 3)
	def(&l.SnapshotInterval, 50)
	return l
}

// GuardStatus reports a guard that was lost for good (its worker died a
// second time); *guard.Host implements it.
type GuardStatus interface{ Err() error }

// RunOptions configure Run.
type RunOptions struct {
	LLM    llm.Client
	Limits Limits
	// Guard, when set, is asked after every step whether the guard worker
	// was lost for good.
	Guard GuardStatus
	// Report receives each finished step for the live log; may be nil.
	Report func(StepReport)
	// MaxTokens caps each model reply (default 1024).
	MaxTokens int
}

// StepReport is one line of the live step log.
type StepReport struct {
	Step     int
	Action   string // "" when the reply was not an intent
	Target   string
	Allowed  bool
	Check    verdict.Check // the deciding check
	Code     verdict.Code
	Message  string
	Tier     string
	ExitCode *int
	Signal   string
	Preview  string // the observation, truncated
	// SandboxNotes are IronVise's own lines about a command's run
	// (StepResult.SandboxNotes), shown apart from its output.
	SandboxNotes []string
	// Labels are the scanner and policy labels of the observation;
	// Redactions counts the spans replaced in it.
	Labels     []string
	Redactions int
	Completed  bool
	LLMError   string
}

// Outcome is how a run ended.
type Outcome struct {
	SessionID string
	Status    ledger.Status
	// Stop is the halt or circuit-breaker code, or "complete".
	Stop        string
	StopMessage string
	Steps       int
	Executed    int
	Denied      int
	DeniedBy    map[verdict.Check]int
	Findings    []intent.Finding
	Tokens      int
}

// counters are the consecutive-failure counters of
// docs/design/checks.md#check-order.
type counters struct {
	LLMErrors     int `json:"llm_errors"`
	CheckDenials  int `json:"check_denials"`
	SchemaDenials int `json:"schema_denials"`
	GuardDenials  int `json:"guard_denials"`
}

// loopState is what the loop keeps between steps; it is rebuilt from this
// session's events only, and written as a snapshot every SnapshotInterval
// steps.
type loopState struct {
	Step          int           `json:"step"`
	Counters      counters      `json:"counters"`
	Tokens        int           `json:"tokens"`
	Flags         []string      `json:"flags"`
	RecentActions []string      `json:"recent_actions"`
	LastDenial    string        `json:"last_denial"`
	NextSeq       uint64        `json:"next_seq"`
	History       []historyItem `json:"-"`
}

// errStop carries a stop decision out of the step loop.
type errStop struct {
	status  ledger.Status
	code    string
	message string
}

func (e *errStop) Error() string { return e.code + ": " + e.message }

// Run drives the session: prompt scan, then perceive → propose → verify →
// commit → execute → observe until a stop condition, then records the end
// and seals the session. A returned error means the ledger could not be
// written; the session is then ended failed when possible.
func (s *Session) Run(ctx context.Context, o RunOptions) (*Outcome, error) {
	lim := o.Limits.withDefaults()
	if o.MaxTokens <= 0 {
		o.MaxTokens = 1024
	}
	out := &Outcome{SessionID: s.ID.String(), DeniedBy: map[verdict.Check]int{}}
	st := &loopState{}
	stop, err := s.loop(ctx, o, lim, st, out)
	out.Steps, out.Tokens = st.Step, st.Tokens
	// The end is recorded even when ctx was cancelled (Ctrl-C): the final
	// writes get their own short deadline.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if errors.Is(err, ledger.ErrGoalMismatch) {
		// The stored goal no longer matches the one the session started
		// with: the ledger refuses further appends to the chain, so the
		// halt is reported here and the session ends aborted.
		out.Status, out.Stop, out.StopMessage = ledger.StatusAborted, string(verdict.HaltGoalMismatch), err.Error()
		_ = s.env.Ledger.EndSession(fctx, s.ID, ledger.StatusAborted)
		return out, nil
	}
	if err != nil {
		out.Status, out.Stop, out.StopMessage = ledger.StatusFailed, "ledger_error", err.Error()
		_ = s.env.Ledger.EndSession(fctx, s.ID, ledger.StatusFailed)
		return out, err
	}
	out.Status, out.Stop, out.StopMessage = stop.status, stop.code, stop.message
	if s.cfg.BeforeEnd != nil {
		// The gate may wait for an approver: it runs under the loop's
		// context, not the end's short deadline.
		if err := s.cfg.BeforeEnd(ctx, stop.status, st.Step); err != nil {
			out.Status, out.Stop, out.StopMessage = ledger.StatusFailed, "workspace_apply", err.Error()
			_, _ = s.End(fctx, ledger.StatusFailed, "agent", false)
			return out, err
		}
	}
	_, err = s.End(fctx, stop.status, "agent", true)
	return out, err
}

// End records the end of the session with status and seals its chain as
// actor; it returns the seal event. With credential set, a session that
// completed gets its verifiable credential first (the credential is part
// of the chain, so it goes in before the seal); a failure to issue it
// still seals the session, then is reported. The seal of a session that
// ended aborted reaches the notifier.
//
// What the session still has staged (a held step result) commits with the
// end; without a credential to issue, the end and the seal are one commit.
func (s *Session) End(ctx context.Context, status ledger.Status, actor string, credential bool) (ledger.Event, error) {
	end, err := ledger.EndOp(s.ID, status)
	if err != nil {
		return ledger.Event{}, fmt.Errorf("end session: %w", err)
	}
	var credErr error
	var seal ledger.SealResult
	if credential && status == ledger.StatusCompleted && s.env.Credentials != nil {
		if _, err := s.flush(ctx, end); err != nil {
			return ledger.Event{}, fmt.Errorf("end session: %w", err)
		}
		credErr = s.env.Credentials.IssueCredential(ctx, s.ID)
		if seal, err = s.env.Ledger.Seal(ctx, s.ID, actor); err != nil {
			return ledger.Event{}, fmt.Errorf("seal session: %w", err)
		}
	} else {
		res, err := s.flush(ctx, end, ledger.SealOp(s.ID, actor))
		if err != nil {
			return ledger.Event{}, fmt.Errorf("end and seal session: %w", err)
		}
		seal = res[1].(ledger.SealResult)
	}
	if status == ledger.StatusAborted {
		s.Notify(seal.Event)
	}
	if credErr != nil {
		return seal.Event, fmt.Errorf("issue the verifiable credential (the session was sealed without one): %w", credErr)
	}
	return seal.Event, nil
}

func (s *Session) loop(ctx context.Context, o RunOptions, lim Limits, st *loopState, out *Outcome) (*errStop, error) {
	// The loop's own reads and writes never take the interruption's
	// context: an interrupt (Ctrl-C, shutdown, a seal) is taken at the
	// loop's safe points below and ends the session aborted. Cutting a
	// write short instead failed it as a ledger error and lost the record
	// of what had happened (a repaired reply's schema_error, a failed model
	// call). Each write takes a deadline of its own (s.append).
	lctx := context.WithoutCancel(ctx)
	// The goal passes the prompt scan once, before any model call.
	pv := s.env.Scanner.ScanGoal(s.Goal)
	if err := s.appendVerdictTimed(lctx, 0, "", checkTimed(pv)); err != nil {
		return nil, err
	}
	if pv.Denied() {
		return &errStop{ledger.StatusAborted, string(pv.Code), pv.Message}, nil
	}
	s.AddFlags(pv.Flags...)
	marker := newMarker()
	for {
		if ctx.Err() != nil {
			return s.halt(ctx, st, verdict.HaltInterrupted, "interrupted by the operator", 1, ledger.StatusAborted)
		}
		if st.Step >= lim.MaxSteps {
			return s.halt(ctx, st, verdict.HaltMaxSteps, fmt.Sprintf("step limit %d", lim.MaxSteps), lim.MaxSteps, ledger.StatusFailed)
		}
		if err := s.perceive(lctx, st, marker); err != nil {
			return nil, err
		}
		req := llm.Request{
			Kind: llm.KindAgent, System: systemPrompt(s.Goal, s.cfg.Workspace, lim.MaxSteps),
			Messages:  []llm.Message{{Role: llm.RoleUser, Content: userPrompt(st.Step+1, lim.MaxSteps, st.History, st.LastDenial)}},
			JSON:      true,
			MaxTokens: o.MaxTokens,
		}
		minJustify := s.cfg.Tripwire.Config().MinJustification
		prop, perr := llm.ProposeIntent(ctx, o.LLM, req, func(text string) error {
			_, err := intent.Parse(text, intent.Options{MinJustification: minJustify, ShapeOnly: true})
			return err
		})
		st.Tokens += prop.Usage.Total()
		if prop.Repaired {
			if err := s.appendSchemaError(lctx, st.Step+1, prop); err != nil {
				return nil, err
			}
		}
		if perr != nil {
			if ctx.Err() != nil {
				return s.halt(ctx, st, verdict.HaltInterrupted, "interrupted by the operator", 1, ledger.StatusAborted)
			}
			st.Counters.LLMErrors++
			s.report(o, StepReport{Step: st.Step + 1, LLMError: perr.Error()})
			if _, err := s.append(lctx, ledger.TypeThought, thoughtEvent{
				Content: fmt.Sprintf("model call failed (%d of %d allowed in a row): %v", st.Counters.LLMErrors, lim.LLMErrorLimit, perr),
			}); err != nil {
				return nil, err
			}
			if st.Counters.LLMErrors >= lim.LLMErrorLimit {
				return s.breaker(ctx, st, verdict.HaltLLMErrors, st.Counters.LLMErrors)
			}
			continue
		}
		st.Counters.LLMErrors = 0
		st.Step++
		call := &LLMCall{Backend: o.LLM.Backend(), Model: prop.Model, InputTokens: prop.Usage.InputTokens,
			OutputTokens: prop.Usage.OutputTokens, UsageReported: prop.Usage.Reported, Repaired: prop.Repaired}
		if call.Model == "" {
			call.Model = o.LLM.Model()
		}
		res, err := s.step(ctx, st.Step, prop.Reply, SourceLLM, call)
		if err != nil {
			return nil, err
		}
		rep := s.account(st, res, out)
		s.report(o, rep)
		if stop, err := s.afterStep(ctx, o, lim, st, res); stop != nil || err != nil {
			return stop, err
		}
	}
}

// account updates the counters and the outcome after a step.
func (s *Session) account(st *loopState, res *StepResult, out *Outcome) StepReport {
	cr := res.Check
	rep := StepReport{Step: res.Step, Allowed: cr.Allowed(), Check: cr.Decisive.Check, Code: cr.Decisive.Code, Message: cr.Decisive.Message}
	if cr.Intent != nil {
		rep.Action, rep.Target = string(cr.Intent.Action), cr.Intent.Target()
	}
	if cr.Intent != nil && cr.Allowed() {
		// Loop detection looks at executed actions: repeated denials are
		// what the consecutive-denial counters are for.
		sig, _ := json.Marshal(cr.Intent.Params())
		st.RecentActions = append(st.RecentActions, string(cr.Intent.Action)+" "+string(sig))
		if len(st.RecentActions) > 6 {
			st.RecentActions = st.RecentActions[len(st.RecentActions)-6:]
		}
	}
	st.Flags = appendUnique(st.Flags, cr.Flags...)
	if !cr.Allowed() {
		out.Denied++
		out.DeniedBy[cr.Decisive.Check]++
		d := cr.Decisive
		st.LastDenial = fmt.Sprintf("check=%s code=%s message=%s", d.Check, d.Code, d.Message)
		// Each counter counts consecutive steps of its kind; a step of any
		// other outcome breaks the run (docs/design/checks.md#check-order).
		c := &st.Counters
		switch d.Check {
		case verdict.CheckSchema:
			c.SchemaDenials, c.CheckDenials, c.GuardDenials = c.SchemaDenials+1, c.CheckDenials+1, 0
		case verdict.CheckGuard:
			c.SchemaDenials, c.CheckDenials, c.GuardDenials = 0, 0, c.GuardDenials+1
		default: // policy, tripwire, approval (and a failed record)
			c.SchemaDenials, c.CheckDenials, c.GuardDenials = 0, c.CheckDenials+1, 0
		}
		return rep
	}
	// A step that reaches execution resets every counter.
	st.Counters = counters{}
	st.LastDenial = ""
	if res.Executed() {
		out.Executed++
	}
	if res.Sandbox != nil {
		rep.Tier, rep.ExitCode, rep.Signal = string(res.Sandbox.Tier), res.Sandbox.ExitCode, res.Sandbox.Signal
		rep.SandboxNotes = res.SandboxNotes
	}
	if res.Observation != nil {
		rep.Preview = res.Observation.Content
		rep.Labels = res.Observation.Labels
		// Withheld spans, and the placeholders of credentials and policy
		// redactions.
		rep.Redactions = res.Observation.Withheld() + strings.Count(res.Observation.Content, "[REDACTED:")
	}
	if res.Completed {
		rep.Completed = true
		out.Findings = s.redactFindings(cr.Intent.Findings)
	}
	return rep
}

// afterStep applies the stop conditions that follow a step.
func (s *Session) afterStep(ctx context.Context, o RunOptions, lim Limits, st *loopState, res *StepResult) (*errStop, error) {
	switch {
	case res.Completed:
		return &errStop{ledger.StatusCompleted, "complete", "the agent completed the goal"}, nil
	case res.Halted != "":
		// session_halted was written with the observation.
		return &errStop{ledger.StatusAborted, string(verdict.HaltObservationAbort), "rule " + res.Halted}, nil
	}
	if o.Guard != nil && o.Guard.Err() != nil {
		return s.breaker(ctx, st, verdict.GuardUnavailable, 2)
	}
	if st.Counters.SchemaDenials >= lim.JustificationFailureLimit {
		return s.breaker(ctx, st, verdict.HaltCheckDenials, st.Counters.SchemaDenials)
	}
	if st.Counters.CheckDenials >= lim.CheckDenialLimit {
		return s.breaker(ctx, st, verdict.HaltCheckDenials, st.Counters.CheckDenials)
	}
	if st.Counters.GuardDenials >= lim.GuardDenialLimit {
		return s.breaker(ctx, st, verdict.HaltGuardDenials, st.Counters.GuardDenials)
	}
	if lim.TokenBudget > 0 && st.Tokens > lim.TokenBudget {
		return s.halt(ctx, st, verdict.HaltTokenBudget, fmt.Sprintf("token budget %d exceeded (%d used)", lim.TokenBudget, st.Tokens), st.Tokens, ledger.StatusAborted)
	}
	if n := repeats(st.RecentActions); n >= 3 {
		return s.halt(ctx, st, verdict.HaltLoopDetected, fmt.Sprintf("the same action with the same params %d times in the last %d steps", n, len(st.RecentActions)), n, ledger.StatusAborted)
	}
	if ctx.Err() != nil {
		// Interrupted: the loop records the halt next; no rotation or
		// snapshot is started (one started runs to its end: see loop).
		return nil, nil
	}
	if lim.KeyRotationSteps > 0 && st.Step%lim.KeyRotationSteps == 0 {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.env.writeTimeout())
		_, err := s.env.Ledger.RotateKey(wctx, s.ID)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("rotate the session key: %w", err)
		}
	}
	if st.Step%lim.SnapshotInterval == 0 {
		if err := s.snapshot(context.WithoutCancel(ctx), st); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// repeats returns the largest number of equal entries in the window.
func repeats(window []string) int {
	best := 0
	for i := range window {
		n := 0
		for j := range window {
			if window[j] == window[i] {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

// perceive reads this session's events since the last step and updates the
// history the prompt shows. It never reads another session's events.
func (s *Session) perceive(ctx context.Context, st *loopState, marker string) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, s.env.writeTimeout())
		evs, err := s.env.Ledger.Events(rctx, s.ID, st.NextSeq, 500)
		cancel()
		if err != nil {
			return fmt.Errorf("read the session's events: %w", err)
		}
		for _, e := range evs {
			if e.SessionID != s.ID {
				return fmt.Errorf("read the session's events: event of session %s returned for %s", e.SessionID, s.ID)
			}
			if t := summarize(e, marker); t != "" {
				st.History = append(st.History, historyItem{Text: t})
			}
			st.NextSeq = e.Seq + 1
		}
		if len(evs) < 500 {
			break
		}
	}
	if len(st.History) > HistoryEvents {
		st.History = st.History[len(st.History)-HistoryEvents:]
	}
	return nil
}

func (s *Session) snapshot(ctx context.Context, st *loopState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	// Redacted before hashing, so the recorded state matches its hash.
	if b, _, err = s.red.JSON(b); err != nil {
		return fmt.Errorf("redact snapshot: %w", err)
	}
	sum := sha256.Sum256(b)
	_, err = s.append(ctx, ledger.TypeSnapshot, snapshotEvent{Step: st.Step, StateSHA256: hex.EncodeToString(sum[:]), State: json.RawMessage(b)})
	if err != nil {
		return fmt.Errorf("record snapshot: %w", err)
	}
	return nil
}

func (s *Session) appendSchemaError(ctx context.Context, step int, p llm.Proposal) error {
	raw, _ := truncateRaw(p.FirstReply)
	_, err := s.append(ctx, ledger.TypeSchemaError, schemaErrorEvent{
		Step: step, Message: p.FirstError.Error(), Attempt: 1, MaxAttempts: 2, Raw: raw,
	})
	if err != nil {
		return fmt.Errorf("record schema_error: %w", err)
	}
	return nil
}

// halt records session_halted and stops with status: aborted for an
// interruption or a runaway run, failed for a run that used up its steps.
func (s *Session) halt(ctx context.Context, st *loopState, code verdict.Code, msg string, count int, status ledger.Status) (*errStop, error) {
	if _, err := s.append(context.WithoutCancel(ctx), ledger.TypeSessionHalted, sessionHaltedEvent{Step: st.Step, Code: string(code), Message: msg, Count: count}); err != nil {
		return nil, fmt.Errorf("record session_halted: %w", err)
	}
	return &errStop{status, string(code), msg}, nil
}

// breaker records circuit_breaker and stops aborted.
func (s *Session) breaker(ctx context.Context, st *loopState, reason verdict.Code, n int) (*errStop, error) {
	if _, err := s.append(context.WithoutCancel(ctx), ledger.TypeCircuitBreaker, circuitBreakerEvent{Step: st.Step, Reason: string(reason), ConsecutiveFailures: n}); err != nil {
		return nil, fmt.Errorf("record circuit_breaker: %w", err)
	}
	return &errStop{ledger.StatusAborted, string(reason), fmt.Sprintf("%d consecutive failures", n)}, nil
}

// redactFindings returns a copy of findings with their text redacted, as
// the action event recorded them, for the summary a front end prints.
func (s *Session) redactFindings(fs []intent.Finding) []intent.Finding {
	out := make([]intent.Finding, len(fs))
	for i, f := range fs {
		f.Title, f.Evidence, f.Recommendation = s.red.String(f.Title), s.red.String(f.Evidence), s.red.String(f.Recommendation)
		quotes := make([]string, len(f.EvidenceQuotes))
		for j, q := range f.EvidenceQuotes {
			quotes[j] = s.red.String(q)
		}
		f.EvidenceQuotes = quotes
		out[i] = f
	}
	return out
}

// report hands a step to the live log with every text from the step
// passed through the session's redactor: the target is the model's
// command, the message may quote it, and a model error may quote a reply.
func (s *Session) report(o RunOptions, r StepReport) {
	if o.Report == nil {
		return
	}
	r.Target, r.Message, r.Preview, r.LLMError = s.red.String(r.Target), s.red.String(r.Message), s.red.String(r.Preview), s.red.String(r.LLMError)
	o.Report(r)
}

func checkTimed(v verdict.Verdict) check.Timed { return check.Timed{Verdict: v} }
