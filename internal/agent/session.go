package agent

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/action"
	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/overlay"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/redact"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// Env is what every session of a process shares.
type Env struct {
	Ledger  *ledger.Ledger
	Tier    sandbox.Tier
	Scanner *scan.Scanner
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// HTTPTLS overrides the TLS configuration of http_get (tests trust a
	// local CA); nil uses the system roots.
	HTTPTLS *tls.Config
	// SandboxEnv is the candidate environment for commands; the tier keeps
	// only its allowlist.
	SandboxEnv []string
	// Notifier, when set, receives denials, sandbox aborts, observations
	// and aborted seals for SIEM egress (hooks.go).
	Notifier Notifier
	// Credentials, when set, issues the verifiable credential of a
	// session that completes, before its seal (hooks.go).
	Credentials CredentialIssuer
	// WriteTimeout bounds each ledger write of a step on its own (zero
	// means DefaultWriteTimeout); tests shorten it.
	WriteTimeout time.Duration
}

// DefaultWriteTimeout bounds one ledger write of a step.
const DefaultWriteTimeout = 30 * time.Second

func (e *Env) writeTimeout() time.Duration {
	if e.WriteTimeout > 0 {
		return e.WriteTimeout
	}
	return DefaultWriteTimeout
}

// Config is what one session enforces.
type Config struct {
	Workspace string
	Tripwire  *tripwire.Tripwire
	Policy    *policy.Policy
	// Guard is nil when the guard is disabled; GuardDisabled then names
	// why (the message of the skip verdict).
	Guard         check.Guard
	GuardDisabled string
	Approver      check.Approver
	// Egress, when non-nil, runs every command in proxy mode with these
	// rules (the configured allow list narrowed by the policy); nil gives
	// commands no network.
	Egress *egress.Rules
	// Overlay, when non-nil, runs every command on a writable overlay of
	// the workspace (workspace.go); nil keeps the workspace read-only.
	Overlay *Overlay
	// BeforeEnd, when set, runs once the loop has stopped and before Run
	// records the end, with the stop's status and the last step: the
	// session package's approval gate for applying an overlay session's
	// changes. An error ends the session failed.
	BeforeEnd func(ctx context.Context, status ledger.Status, lastStep int) error
}

// RecordApproval records an approval gate that belongs to no intent (the
// apply gate of an overlay session): approval_required is committed before
// the approver is asked, so an approver reads it from the ledger, and the
// decision is committed after. Without an approver the request resolves at
// once as a timeout, with req.OnTimeout's answer.
func (s *Session) RecordApproval(ctx context.Context, req check.ApprovalRequest) (check.ApprovalDecision, error) {
	if _, err := s.append(ctx, ledger.TypeApprovalRequired, req); err != nil {
		return check.ApprovalDecision{}, fmt.Errorf("append approval_required: %w", err)
	}
	var d check.ApprovalDecision
	if s.cfg.Approver == nil {
		d = check.ApprovalDecision{Approved: req.OnTimeout == "allow", DecidedBy: check.DecidedByNoApprover, TimedOut: true}
	} else {
		d = s.cfg.Approver.Decide(ctx, req)
	}
	d.Step, d.GateID = req.Step, req.GateID
	if d.Reason == nil {
		r := d.DecidedBy
		d.Reason = &r
	}
	if _, err := s.append(ctx, ledger.TypeApprovalDecision, d); err != nil {
		return d, fmt.Errorf("append approval_decision: %w", err)
	}
	return d, nil
}

// Session runs intents for one ledger session: the checks, the commit, the
// execution and the observation. The proposal, its verdicts and the action
// are durable before anything executes; the results are durable when the
// step returns (or, with HoldResults, when End returns).
// Steps of one session must not run concurrently; Session serialises them.
type Session struct {
	ID   uuid.UUID
	Goal string

	env *Env
	cfg Config
	log *slog.Logger
	// red redacts credentials from everything the session records or
	// reports, salted with the session id (internal/redact).
	red *redact.Redactor

	// mu serialises steps; the fields below are guarded by it.
	mu    sync.Mutex
	flags []string // deterministic flags raised so far (docs/design/checks.md#flags)

	// st holds the records staged for the next commit (stage.go).
	st stage
}

// Open binds a session that exists in the ledger to its checks.
func Open(env *Env, id uuid.UUID, goal string, cfg Config) *Session {
	log := env.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Session{ID: id, Goal: goal, env: env, cfg: cfg, log: log.With("session", id.String()), red: redact.ForSession(id.String())}
}

// Redactor returns the session's credential redactor: front ends pass
// text they show about the session (the live log, a stream) through it.
func (s *Session) Redactor() *redact.Redactor { return s.red }

// AddFlags records flags that later steps forward to the guard (the prompt
// scan's flags).
func (s *Session) AddFlags(flags ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flags = appendUnique(s.flags, flags...)
}

// Source says who proposed an intent (docs/design/api.md#event-payloads).
type Source string

// Sources of intents.
const (
	SourceLLM Source = "llm"
	SourceAPI Source = "api"
)

// StepResult is the outcome of one step.
type StepResult struct {
	Step     int
	IntentID string
	Check    *check.Result
	// Committed reports that the action event was written (the step
	// passed every check); ActionSeq is its sequence number.
	Committed bool
	ActionSeq uint64
	// Sandbox is set for a run_command that reached the sandbox;
	// SandboxSeq is the sequence of its sandbox_result.
	Sandbox    *sandbox.Result
	SandboxSeq *uint64
	// SandboxNotes are IronVise's lines about the run (the memory hint,
	// the explanation of a failure the sandbox's rules caused), as the
	// observation carries them after its headline, credentials redacted.
	SandboxNotes []string
	// sandboxRef is the staged sandbox_result, until it commits.
	sandboxRef *seqRef
	// Observation is the recorded observation, when one was written.
	Observation *Observation
	// Halted is set when an observation rule with action abort fired: the
	// session must end aborted (session_halted was written).
	Halted string
	// Completed reports a committed complete action.
	Completed bool
	// DeniedAtExecution reports that the tripwire stopped a committed
	// read_file or http_get as it ran (an execute-phase deny verdict).
	DeniedAtExecution bool
	// Workspace is set for a run_command in overlay mode: its change set
	// and whether it was kept.
	Workspace *WorkspaceResult
}

// Executed reports whether the step's action counts as executed
// (evidence.ActionExecuted, the definition every count uses).
func (r *StepResult) Executed() bool {
	if !r.Committed || r.Check == nil || r.Check.Intent == nil {
		return false
	}
	status := ""
	if r.Sandbox != nil {
		status = string(r.Sandbox.Status)
	}
	return evidence.ActionExecuted(string(r.Check.Intent.Action), status, r.DeniedAtExecution)
}

// Observation is a recorded observation.
type Observation struct {
	Seq uint64
	// Content is the recorded text (credentials redacted, injection
	// attempts kept as evidence); Spans say where the scanner's hits are.
	Content    string
	Spans      []scan.Span
	Labels     []string
	Truncated  bool
	Suspicious bool
	// Secrets counts the credentials replaced by placeholders.
	Secrets int
}

// ModelView returns the observation as a model reads it: the content with
// the fenced spans withheld (scan.ModelView). An agent outside IronVise
// that submitted the intent gets this, never Content.
func (o *Observation) ModelView() string { return scan.ModelView(o.Content, o.Spans) }

// Withheld counts the spans the model reads as [WITHHELD:…].
func (o *Observation) Withheld() int {
	n := 0
	for _, sp := range o.Spans {
		if sp.Fenced {
			n++
		}
	}
	return n
}

// Step checks, commits, executes and observes one proposed intent. The
// step's records commit together at the points that need them durable
// (stage.go): the proposal, the verdicts and the action before anything
// executes, an approval request before the wait for its decision, the
// results when the step returns. An error is returned only when the ledger
// cannot be written, and then nothing more was executed.
func (s *Session) Step(ctx context.Context, step int, raw string, src Source) (*StepResult, error) {
	return s.step(ctx, step, raw, src, nil)
}

// LLMCall describes the model call that produced a reply; it is recorded
// with the proposal (token usage when the API reported it, never a key).
type LLMCall struct {
	Backend      string `json:"backend"`
	Model        string `json:"model"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	// UsageReported is false when the API said nothing about usage.
	UsageReported bool `json:"usage_reported"`
	Repaired      bool `json:"repaired"`
}

func (s *Session) step(ctx context.Context, step int, raw string, src Source, call *LLMCall) (*StepResult, error) {
	return s.runStep(ctx, step, raw, src, call, false)
}

// runStep is step; delegated steps are checked, recorded and committed but
// never executed: the agent that proposed the intent runs it itself once
// the answer allows it (Decide).
func (s *Session) runStep(ctx context.Context, step int, raw string, src Source, call *LLMCall, delegated bool) (*StepResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := &StepResult{Step: step, IntentID: uuid.NewString()}
	// Records of a step that has begun are written even when ctx is
	// cancelled (Ctrl-C, shutdown): an interrupt stops what runs, never the
	// evidence of it. Checks, the guard and the sandbox still use ctx.
	// rctx carries no deadline of its own: each write takes a fresh one
	// (s.append), because a deadline taken here would run out while the
	// guard, an approval or a long command holds the step, and the
	// sandbox_result of a command that ran within its limit was then lost.
	rctx := context.WithoutCancel(ctx)
	rec := &recorder{s: s, step: step, intentID: res.IntentID, src: src, call: call, rctx: rctx}
	// A command is confined while the guard reviews it and its intent
	// commits: the tier prepares it (the launcher's mounts, Landlock and
	// seccomp) once the checks before the guard allowed it, and it starts
	// only once the guard allowed it too and the commit is durable, or
	// never. (Preparing after the guard put the launcher's confinement
	// after a model's answer; and without a guard the launcher finished
	// about 2.5 ms after the commit when commands follow each other,
	// docs/operate/performance-log.md#exec-2026-12-04.)
	var early *earlyCommand
	if !delegated && s.cfg.Overlay == nil {
		early = &earlyCommand{}
		defer early.discard()
	}
	p := &check.Pipeline{
		Tripwire: s.cfg.Tripwire, Policy: check.PolicyCheck(s.cfg.Policy),
		Guard: s.cfg.Guard, GuardDisabled: s.cfg.GuardDisabled, Approver: s.cfg.Approver,
		Observations: ledgerObservations{ctx: rctx, l: s.env.Ledger, session: s.ID, timeout: s.env.writeTimeout()}, Sink: rec,
		// IronVise executes no writes: only an agent that runs its own
		// tools may propose write_file.
		NoWrite: !delegated,
	}
	if early != nil {
		p.Reviewing = func(in *intent.Intent) {
			if in.Action == intent.RunCommand {
				early.start(ctx, s.env.Tier, s.commandRequest(in))
				if s.cfg.Guard == nil {
					// Without a guard the launcher's confinement is the
					// longer path, not the commit: this goroutine gives its
					// P to the preparation just started instead of leaving
					// it to wait until the scheduler wakes another thread
					// (0.45–0.6 ms on a busy two-core machine; 0.05 ms
					// yielding, docs/operate/performance-log.md#exec-2026-12-04-morning).
					// With a guard the model's answer is the longer path,
					// and its request goes out first.
					runtime.Gosched()
				}
			}
		}
	}
	cr := p.Run(ctx, check.Input{SessionID: s.ID.String(), Step: step, Goal: s.Goal, Raw: raw, SessionFlags: s.flags})
	res.Check = cr
	if cr.RecordErr == nil && rec.err != nil {
		cr.RecordErr = rec.err
	}
	if cr.RecordErr != nil {
		s.dropStaged()
		return res, fmt.Errorf("record step %d: %w", step, cr.RecordErr)
	}
	s.flags = appendUnique(s.flags, cr.Flags...)
	in := cr.Intent
	if !cr.Allowed() || ctx.Err() != nil {
		// Denied, or interrupted after the checks: the proposal and the
		// verdicts are recorded; nothing is committed or run.
		if _, err := s.flush(rctx); err != nil {
			return res, fmt.Errorf("record step %d: %w", step, err)
		}
		return res, nil
	}
	// Commit: the approved intent is signed into the chain before it runs
	// (verify-then-commit, then execute). The proposal, its verdicts and
	// the action commit together, durably, before anything executes.
	intentRef := rec.intent
	s.stageBuilt(ledger.TypeAction, func(prior []ledger.Event) (any, error) {
		seq, err := intentRef.resolve(prior)
		if err != nil {
			return nil, err
		}
		ev := actionEvent{Step: step, IntentSeq: seq, IntentID: res.IntentID, Name: string(in.Action), Params: in.Params()}
		if delegated {
			ev.ExecutedBy = ExecutedByAgent
		}
		return ev, nil
	}, func(ev ledger.Event) { res.Committed, res.ActionSeq = true, ev.Seq })
	// The command prepared since the guard began its review (early) runs
	// once the commit is durable.
	var held sandbox.Prepared
	if in.Action == intent.RunCommand && !delegated && s.cfg.Overlay == nil {
		ready := early.take(s.commandRequest(in))
		if ready == nil {
			// Not prepared yet (or for another request): now.
			early.discard()
			c := make(chan sandbox.Prepared, 1)
			req := s.commandRequest(in)
			go func() { c <- sandbox.Prepare(ctx, s.env.Tier, req) }()
			ready = c
		}
		_, err := s.flush(rctx)
		held = <-ready
		if err != nil {
			held.Discard()
			return res, fmt.Errorf("commit step %d: %w", step, err)
		}
	} else if _, err := s.flush(rctx); err != nil {
		return res, fmt.Errorf("commit step %d: %w", step, err)
	}
	if in.Action == intent.Complete {
		res.Completed = true
		return res, nil
	}
	if delegated {
		return res, nil
	}
	text, err := s.execute(ctx, rctx, res, in, held)
	if err == nil {
		err = s.observe(res, text)
	}
	if err != nil {
		s.dropStaged()
		return res, err
	}
	if s.holding() {
		return res, nil
	}
	if _, err := s.flush(rctx); err != nil {
		return res, fmt.Errorf("record the result of step %d: %w", step, err)
	}
	return res, nil
}

// earlyCommand is a command the tier prepares while the guard reviews it
// (runStep): the Prepared arrives on ready. What is not taken by the step's
// commit is discarded when the step returns: nothing of it ever runs.
type earlyCommand struct {
	req   sandbox.Request
	ready chan sandbox.Prepared
}

// start prepares req in the background; a second call does nothing.
func (e *earlyCommand) start(ctx context.Context, tier sandbox.Tier, req sandbox.Request) {
	if e.ready != nil {
		return
	}
	ready := make(chan sandbox.Prepared, 1)
	e.req, e.ready = req, ready
	go func() { ready <- sandbox.Prepare(ctx, tier, req) }()
}

// take hands over the command being prepared when it is req, nil
// otherwise (nothing was started, or for a request the checks changed);
// e may be nil.
func (e *earlyCommand) take(req sandbox.Request) <-chan sandbox.Prepared {
	if e == nil || e.ready == nil || !reflect.DeepEqual(e.req, req) {
		return nil
	}
	ready := e.ready
	e.ready = nil
	return ready
}

// discard waits for a command still held and discards it (a denial, an
// interrupt, a failed record, another request).
func (e *earlyCommand) discard() {
	if e == nil || e.ready == nil {
		return
	}
	(<-e.ready).Discard()
	e.ready = nil
}

// dropStaged forgets the records a failed step staged (keeping a deferred
// creation, which the next write still needs).
func (s *Session) dropStaged() {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.recs, s.st.done = nil, nil
}

// append writes one event of this session under its own deadline of
// Env.WriteTimeout. ctx should be a step's rctx (no cancel), so that
// neither an interrupt nor the time the step already took cuts the write
// short; the deadline only guards against a stalled database.
//
// Every string of the payload passes the session's redactor first: a
// command, a denial message quoting it, a model reply or an error can carry
// a credential as well as an observation can, and the ledger feeds the
// model, the stream, webhooks and reports. Observations are the exception:
// they were redacted by the scan with the same redactor, and their spans
// index their content, which must not move.
//
// Whatever the session staged (stage.go) commits first, in the same
// transaction.
func (s *Session) append(ctx context.Context, typ string, payload any) (ledger.Event, error) {
	var ev ledger.Event
	if _, err := s.stageRecord(typ, payload, func(e ledger.Event) { ev = e }); err != nil {
		return ledger.Event{}, err
	}
	if _, err := s.flush(ctx); err != nil {
		return ledger.Event{}, err
	}
	return ev, nil
}

// commandRequest is the sandbox request of a run_command intent.
func (s *Session) commandRequest(in *intent.Intent) sandbox.Request {
	return sandbox.Request{Command: in.Command, Workspace: s.cfg.Workspace, Env: s.env.SandboxEnv, Egress: s.cfg.Egress}
}

// execute runs a committed intent and returns the observation text before
// scanning. Failures of the action itself are observations, not errors.
// held is the command prepared during the commit; nil in overlay mode,
// whose layer is made here first, before the command is run.
func (s *Session) execute(ctx, rctx context.Context, res *StepResult, in *intent.Intent, held sandbox.Prepared) (string, error) {
	switch in.Action {
	case intent.RunCommand:
		var pend *overlay.Pending
		var sr sandbox.Result
		if held != nil {
			sr = held.Start()
		} else {
			req := s.commandRequest(in)
			if s.cfg.Overlay != nil {
				// Fail closed: without its layer the command does not
				// run (it must never write to the real workspace).
				p, err := s.beginOverlay(res.Step)
				if err != nil {
					res.Workspace = &WorkspaceResult{Err: err.Error()}
					return "[run_command not run: the workspace overlay could not be prepared: " + oneLine(err.Error()) + "]", nil
				}
				pend, req.Overlay = p, p.Overlay()
			}
			sr = s.env.Tier.Run(ctx, req)
		}
		res.Sandbox = &sr
		ref, err := s.stageSandboxResult(res, sr)
		if err != nil {
			if pend != nil {
				_ = pend.Discard()
			}
			return "", err
		}
		res.sandboxRef = ref
		if err := s.stageEgress(res, sr.Egress); err != nil {
			if pend != nil {
				_ = pend.Discard()
			}
			return "", err
		}
		for _, n := range sr.Notes(s.cfg.Workspace) {
			res.SandboxNotes = append(res.SandboxNotes, s.red.String(n))
		}
		lines := egressLines(sr.Egress)
		if pend != nil {
			wl, err := s.finishOverlay(res, pend, &sr)
			if err != nil {
				return "", err
			}
			for _, l := range wl {
				res.SandboxNotes = append(res.SandboxNotes, s.red.String("workspace "+strings.TrimPrefix(l, "[workspace] ")))
			}
			lines = append(lines, wl...)
		}
		for _, l := range lines {
			res.SandboxNotes = append(res.SandboxNotes, s.red.String("egress "+strings.TrimPrefix(l, "[egress] ")))
		}
		return withEgressLines(sr.ObservationIn(s.cfg.Workspace), lines), nil
	case intent.ReadFile:
		out, denied, err := action.ReadFile(s.cfg.Tripwire, in.Path)
		if denied != nil {
			res.DeniedAtExecution = true
			if err := s.stageVerdict(res, *denied); err != nil {
				return "", err
			}
			return fmt.Sprintf("[read_file denied at execution by tripwire: %s: %s]", denied.Code, denied.Message), nil
		}
		if err != nil {
			return fmt.Sprintf("[read_file failed: %v]", err), nil
		}
		text, _ := scan.CapStream(out.Data, out.Total)
		return text, nil
	case intent.HTTPGet:
		h := &action.HTTP{Tripwire: s.cfg.Tripwire, TLS: s.env.HTTPTLS}
		// The request dials the addresses the tripwire resolved when it
		// allowed the intent; only redirect hops are checked (and recorded)
		// anew.
		hr, verdicts, err := h.Get(ctx, in.URL, res.Check.View.URL.Addrs)
		for _, v := range verdicts {
			if err := s.stageVerdict(res, v); err != nil {
				return "", err
			}
		}
		if n := len(verdicts); n > 0 && verdicts[n-1].Denied() {
			res.DeniedAtExecution = true
			last := verdicts[n-1]
			return fmt.Sprintf("[http_get denied at execution by tripwire: %s: %s]", last.Code, last.Message), nil
		}
		if err != nil {
			return fmt.Sprintf("[http_get failed: %v]", err), nil
		}
		body, _ := scan.CapStream(hr.Body.Data, hr.Body.Total)
		return hr.Summary() + "\n" + body, nil
	}
	return "", fmt.Errorf("execute: unexpected action %q", in.Action)
}

// observe scans the observation text, applies the policy's observation
// rules and records the observation (and session_halted for an abort rule).
// Credentials are replaced before anything is recorded, with or without a
// policy; the model later reads the recorded content with the scanner's
// fenced spans withheld (summarize).
func (s *Session) observe(res *StepResult, text string) error {
	sr := s.env.Scanner.ScanWith(text, s.red)
	var abort string
	if s.cfg.Policy != nil {
		sr, abort = scan.ApplyRules(sr, s.cfg.Policy.ObservationRules())
	}
	labels := sr.Labels
	if labels == nil {
		labels = []string{}
	}
	spans := sr.Spans
	if spans == nil {
		spans = []scan.Span{}
	}
	obs := &Observation{Content: sr.Content, Spans: spans, Labels: labels,
		Truncated: sr.Truncated, Suspicious: sr.Suspicious, Secrets: len(sr.Secrets)}
	sbx := res.sandboxRef
	s.stageBuilt(ledger.TypeObservation, func(prior []ledger.Event) (any, error) {
		ev := observationEvent{
			Step: res.Step, ActionSeq: res.ActionSeq, Content: sr.Content, Labels: labels,
			Truncated: sr.Truncated, Suspicious: sr.Suspicious, RawSHA256: sr.RawSHA256,
			Spans: spans, Secrets: len(sr.Secrets),
		}
		if sbx != nil {
			seq, err := sbx.resolve(prior)
			if err != nil {
				return nil, err
			}
			ev.SandboxResultSeq = &seq
		}
		return ev, nil
	}, func(ev ledger.Event) {
		obs.Seq = ev.Seq
		s.Notify(ev)
	})
	res.Observation = obs
	if abort != "" {
		res.Halted = abort
		if _, err := s.stageRecord(ledger.TypeSessionHalted, sessionHaltedEvent{
			Step: res.Step, Code: "halt_observation_abort", Message: "rule " + abort, Count: 1,
		}, nil); err != nil {
			return fmt.Errorf("record session_halted: %w", err)
		}
	}
	return nil
}

// appendSandboxResult records what the sandbox enforced and how the
// command ended. The streams themselves are not stored here: they reach
// the ledger scanned and redacted in the observation, and this record
// commits to the raw streams by SHA-256 so redaction never stores a secret.
func (s *Session) stageSandboxResult(res *StepResult, r sandbox.Result) (*seqRef, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode sandbox_result: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encode sandbox_result: %w", err)
	}
	m["intent_id"] = res.IntentID
	m["stdout"], m["stderr"] = nil, nil
	m["stdout_sha256"], m["stderr_sha256"] = sha256Hex(r.Stdout), sha256Hex(r.Stderr)
	ref, err := s.stageRecord(ledger.TypeSandboxResult, m, func(ev ledger.Event) {
		seq := ev.Seq
		res.SandboxSeq = &seq
		if r.Status == sandbox.StatusAborted {
			s.Notify(ev)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("record sandbox_result: %w", err)
	}
	return ref, nil
}

// ledgerObservations resolves findings evidence from this session's
// observation events (docs/design/checks.md#schema-check step 9): only an
// observation IronVise recorded from an action it executed counts
// (ledger.ExecutedObservation), never one a client appended through the API,
// whatever it says.
type ledgerObservations struct {
	ctx     context.Context
	l       *ledger.Ledger
	session uuid.UUID
	timeout time.Duration // bounds each read, as Session.append a write
}

// Observation implements intent.Observations.
func (o ledgerObservations) Observation(seq int64) (string, bool, error) {
	if seq < 0 {
		return "", false, nil
	}
	ctx, cancel := context.WithTimeout(o.ctx, o.timeout)
	defer cancel()
	content, problem, err := o.l.ExecutedObservation(ctx, o.session, uint64(seq))
	if err != nil || problem != "" {
		return "", false, err
	}
	return content, true, nil
}

// ErrClosed is returned for steps on a session that ended.
var ErrClosed = errors.New("agent: session has ended")

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func appendUnique(list []string, add ...string) []string {
	for _, a := range add {
		found := false
		for _, x := range list {
			found = found || x == a
		}
		if !found {
			list = append(list, a)
		}
	}
	return list
}

// truncateRaw caps a raw reply for intent_proposed at a rune boundary.
func truncateRaw(raw string) (string, bool) {
	raw = strings.ToValidUTF8(raw, "\uFFFD")
	if len(raw) <= MaxRawRecorded {
		return raw, false
	}
	cut := MaxRawRecorded
	for cut > 0 && raw[cut]&0xC0 == 0x80 {
		cut--
	}
	return raw[:cut], true
}
