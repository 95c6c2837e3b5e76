package session

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// Runtime is what the sessions of one process share. Ledger, Tier and
// Scanner are required.
type Runtime struct {
	Ledger  *ledger.Ledger
	Tier    sandbox.Tier
	Scanner *scan.Scanner
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// SandboxEnv is the candidate environment of sandboxed commands (see
	// SandboxEnv); the tier keeps only its allowlist.
	SandboxEnv []string
	// Notifier, when set, receives the events SIEM egress forwards.
	Notifier agent.Notifier
	// WriteTimeout bounds each ledger write of a step (zero: the agent's
	// default); tests shorten it.
	WriteTimeout time.Duration
	// Network is the configured sandbox network of commands
	// (config.Sandbox.Network), narrowed per session by its policy
	// (EgressRules). The zero value gives commands no network and records
	// none (a runtime whose commands IronVise does not run).
	Network config.Network
	// Workspace is the configured workspace mode (config.Sandbox.Workspace),
	// narrowed per session by its policy (WorkspaceMode); "" records none
	// and keeps the workspace read-only. OverlayRoot is where overlay mode
	// keeps the session layers (OverlayRoot of the data dir).
	Workspace   string
	OverlayRoot string
}

// env is the agent's view of the runtime. Every session issues the
// verifiable credential of a completed run from its own ledger.
func (rt *Runtime) env() *agent.Env {
	return &agent.Env{Ledger: rt.Ledger, Tier: rt.Tier, Scanner: rt.Scanner, Logger: rt.Logger, SandboxEnv: rt.SandboxEnv,
		Notifier: rt.Notifier, Credentials: evidence.Credentials{Ledger: rt.Ledger}, WriteTimeout: rt.WriteTimeout}
}

// Spec is what one session enforces and how it is driven.
type Spec struct {
	Goal      string
	Workspace string
	Tripwire  *tripwire.Tripwire
	// Policy is nil when none is loaded (the policy check records so).
	Policy *policy.Policy
	// Guard is required: a running worker or GuardSkipped's reason.
	Guard *Guard
	// LLM drives an agent-loop session; nil when the intents come from
	// outside (exec, the API's intents, an agent hook).
	LLM llm.Client
	// Approvals returns the approver of the session's approval gates once
	// its id is known (a terminal prompt, the API's approval table); nil,
	// or a nil approver, leaves every gate to its timeout's no-approver
	// decision.
	Approvals func(id uuid.UUID) check.Approver
	// Limits bound the run (see Limits).
	Limits agent.Limits
	// CreatedBy is the hash of the API token that created the session
	// ("" for the command line); token scopes read it.
	CreatedBy string
	// WorkspaceMode is the workspace mode the session asks for: "" (the
	// configuration and the policy decide), "ro" or "overlay", which
	// narrow them and cannot widen them (WorkspaceMode). A bound session
	// (Bind) gets the mode its genesis recorded.
	WorkspaceMode string
}

// Session is one bound session: its ledger record and the agent that runs
// its intents through the checks, the sandbox and the ledger.
type Session struct {
	ID    uuid.UUID
	Goal  string
	Agent *agent.Session
	spec  Spec
	rt    *Runtime
}

// Create records a new session in the ledger (its genesis names the goal,
// the policy and tripwire hashes, whether the guard runs, the model and the
// sandbox tier) and binds it. The session is an agent-loop session when
// spec.LLM is set.
func Create(ctx context.Context, rt *Runtime, spec Spec) (*Session, error) {
	c, err := compose(rt, spec)
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	created, err := rt.Ledger.CreateSession(ctx, ledgerSpec(rt, spec, c))
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	return bind(rt, created.ID, created.Goal, spec, c), nil
}

// composed is what the configuration and a session's policy give its
// commands: the network rules and the workspace mode.
type composed struct {
	rules     *egress.Rules
	overlay   *agent.Overlay
	forbidden []string
}

// compose composes the network rules and the workspace mode of a session;
// either failing is an error naming the fix.
func compose(rt *Runtime, spec Spec) (composed, error) {
	rules, err := EgressRules(rt.Network, spec.Policy)
	if err != nil {
		return composed{}, err
	}
	on, forbidden, err := WorkspaceMode(rt.Workspace, spec.Policy, spec.WorkspaceMode)
	if err != nil {
		return composed{}, err
	}
	ov, err := agentOverlay(rt, on, forbidden)
	if err != nil {
		return composed{}, err
	}
	return composed{rules: rules, overlay: ov, forbidden: forbidden}, nil
}

// Prepare is Create for a caller that runs one step next and then ends the
// session (exec): nothing is written yet; the session's creation commits
// with the records of its first step, before that step executes anything,
// and the step's results with the end and the seal. The whole run costs
// two durable commits instead of one per record. The caller must end the
// session (End) after the step, and must not show the step's output before
// End returned: until then it is not recorded.
func Prepare(rt *Runtime, spec Spec) (*Session, error) {
	c, err := compose(rt, spec)
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	op, id, err := rt.Ledger.CreateSessionOp(ledgerSpec(rt, spec, c))
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	s := bind(rt, id, strings.TrimSpace(spec.Goal), spec, c)
	s.Agent.DeferCreate(op)
	s.Agent.HoldResults()
	return s, nil
}

// ledgerSpec is what the genesis of a session with spec records.
func ledgerSpec(rt *Runtime, spec Spec, c composed) ledger.SessionSpec {
	ls := ledger.SessionSpec{
		Goal: spec.Goal, TripwireHash: spec.Tripwire.Config().SHA256, GuardRequired: spec.Guard.Enabled(),
		SandboxTier: string(rt.Tier.Name()), AgentLoop: spec.LLM != nil, CreatedBy: spec.CreatedBy,
		Network:   sessionNetwork(rt.Network, spec.Policy, c.rules),
		Workspace: sessionWorkspace(rt, spec.Workspace, spec.Policy, spec.WorkspaceMode, c.overlay != nil, c.forbidden),
		Enclave:   spec.Guard.Attestation(),
	}
	if spec.Policy != nil {
		ls.PolicyHash = spec.Policy.SHA256()
	}
	if spec.LLM != nil {
		ls.LLMBackend, ls.LLMModel = spec.LLM.Backend(), spec.LLM.Model()
	}
	return ls
}

// Bind binds a session that exists in the ledger to spec's checks (a
// session resumed by exec --session, or rebuilt by the API after it went
// dormant). spec.Goal is replaced by goal, the recorded one. The network
// rules are composed again (EgressRules); when they no longer compose (the
// configuration changed under the policy since the session started), its
// commands get no network: fail closed, with a warning in the log.
func Bind(rt *Runtime, id uuid.UUID, goal string, spec Spec) *Session {
	var c composed
	rules, err := EgressRules(rt.Network, spec.Policy)
	if err != nil {
		rules = nil
		if rt.Logger != nil {
			rt.Logger.Warn("session network: commands get no network", "session", id.String(), "err", err)
		}
	}
	c.rules = rules
	// Likewise the workspace: when the mode no longer composes, commands
	// see the workspace read-only (fail closed: nothing can be written).
	on, forbidden, err := WorkspaceMode(rt.Workspace, spec.Policy, spec.WorkspaceMode)
	if err == nil {
		c.overlay, err = agentOverlay(rt, on, forbidden)
	}
	if err != nil {
		c.overlay = nil
		if rt.Logger != nil {
			rt.Logger.Warn("session workspace: commands see the workspace read-only", "session", id.String(), "err", err)
		}
	}
	return bind(rt, id, goal, spec, c)
}

func bind(rt *Runtime, id uuid.UUID, goal string, spec Spec, c composed) *Session {
	rules := c.rules
	spec.Goal = goal
	if spec.Tripwire != nil && rt.Network.Mode != "" {
		// The tripwire judges the destinations a command names by the
		// session's own rules, the ones its commands' proxy enforces: a
		// host the policy took off the list is refused before the
		// command runs, with the reason the proxy would give, and with
		// no network at all it judges as in mode none.
		spec.Tripwire = spec.Tripwire.WithEgress(rules)
	}
	if spec.Tripwire != nil && c.overlay != nil {
		// Redirections into the workspace land in the session's overlay,
		// and scripts an earlier command changed there are unreviewed
		// (internal/tripwire/overlay.go).
		spec.Tripwire = spec.Tripwire.WithOverlay(layersChanged(c.overlay.Store, id.String(), spec.Workspace))
	}
	cfg := agent.Config{Workspace: spec.Workspace, Tripwire: spec.Tripwire, Policy: spec.Policy,
		Guard: spec.Guard.Check(), GuardDisabled: spec.Guard.Skip, Egress: rules, Overlay: c.overlay}
	if spec.Approvals != nil {
		cfg.Approver = spec.Approvals(id)
	}
	sess := &Session{ID: id, Goal: goal, spec: spec, rt: rt}
	if c.overlay != nil && spec.LLM != nil {
		// An agent-loop session's changes reach the real workspace only
		// through the apply gate (applygate.go).
		st := c.overlay.Store
		cfg.BeforeEnd = func(ctx context.Context, status ledger.Status, lastStep int) error {
			return sess.applyGate(ctx, st, status, lastStep)
		}
	}
	sess.Agent = agent.Open(rt.env(), id, goal, cfg)
	return sess
}

// Limits returns the session's limits.
func (s *Session) Limits() agent.Limits { return s.spec.Limits }

// RunOptions configure Run.
type RunOptions struct {
	// Report receives each finished step, its text already redacted; nil
	// shows nothing.
	Report func(agent.StepReport)
	// LLM, when set, replaces Spec.LLM for this run (a wrapper that
	// meters the model or takes a seal while the loop waits for it).
	LLM llm.Client
}

// Run drives the agent loop until a stop condition (the goal completed, a
// limit, a circuit breaker, ctx cancelled), then ends and seals the
// session. A returned error means the ledger could not be written.
func (s *Session) Run(ctx context.Context, o RunOptions) (*agent.Outcome, error) {
	client := o.LLM
	if client == nil {
		client = s.spec.LLM
	}
	if client == nil {
		return nil, fmt.Errorf("session %s: no model to run the agent loop", s.ID)
	}
	return s.Agent.Run(ctx, agent.RunOptions{LLM: client, Limits: s.spec.Limits, Guard: s.spec.Guard.Status(), Report: o.Report})
}

// Step runs one intent raw proposed by source as step number step: the
// checks, the commit, the execution and the observation. It applies none
// of the loop's limits (see External).
func (s *Session) Step(ctx context.Context, step int, raw string, source agent.Source) (*agent.StepResult, error) {
	return s.Agent.Step(ctx, step, raw, source)
}

// externalOptions are the loop's limits around submitted intents; a
// completed session gets its verifiable credential before anyone seals it.
func (s *Session) externalOptions() agent.ExternalOptions {
	return agent.ExternalOptions{Limits: s.spec.Limits, Guard: s.spec.Guard.Status(),
		Complete: func(ctx context.Context) error {
			return evidence.Credentials{Ledger: s.rt.Ledger}.IssueCredential(ctx, s.ID)
		}}
}

// External prepares a new session for intents submitted from outside, one
// at a time, under the loop's limits.
func (s *Session) External() *agent.External {
	return agent.NewExternal(s.Agent, s.externalOptions())
}

// Resume rebuilds an externally driven session from its recorded events
// (evs, from the genesis on), so its step count, counters and flags go on
// where they were.
func (s *Session) Resume(evs []ledger.Event) (*agent.External, error) {
	return agent.ResumeExternal(s.Agent, s.externalOptions(), evs)
}

// EndTimeout bounds recording the end of a session and its seal; the end is
// recorded under its own deadline even when the run's context was
// cancelled (an interrupt), or the session would stay running until
// another process's recovery failed it.
const EndTimeout = 30 * time.Second

// End records the session's outcome (status) and seals its chain as actor,
// under a fresh EndTimeout deadline; it returns the seal event. It issues
// no credential: a session that ran the loop was ended by Run.
func (s *Session) End(ctx context.Context, status ledger.Status, actor string) (ledger.Event, error) {
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), EndTimeout)
	defer cancel()
	ev, err := s.Agent.End(ectx, status, actor, false)
	if err != nil {
		return ev, fmt.Errorf("session %s: %w", s.ID, err)
	}
	return ev, nil
}

// Seal seals session id as actor, on request: an API client's seal of a
// session whose end it recorded, or that nothing drives here.
func Seal(ctx context.Context, l *ledger.Ledger, id uuid.UUID, actor string) (ledger.SealResult, error) {
	return l.Seal(ctx, id, actor)
}
