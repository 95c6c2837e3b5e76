package cli

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/demo"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/tripwire"
)

func (a *app) auditCommand() *cobra.Command {
	var o auditOptions
	cmd := &cobra.Command{
		Use:   `audit "<goal>"`,
		Short: "Run an agent session: the LLM proposes, four checks decide, the sandbox runs, the ledger records",
		Long: `Starts an agent session for GOAL. Each step the primary LLM (LLM_BACKEND) proposes
one intent; it passes the schema, policy, tripwire, approval and guard checks;
allowed intents are committed to the ledger, executed (run_command in the
sandbox tier) and their output scanned and recorded. The session ends when the
agent completes, a limit is reached, or you press Ctrl-C; it is then sealed.

The guard (a second LLM) is required unless GUARD_REQUIRED=false or both
--no-guard and --no-guard-confirmed are given.`,
		Example: `  LLM_BACKEND=openai OPENAI_MODEL=gpt-4o-mini GUARD_LLM_BACKEND=openai GUARD_LLM_MODEL=gpt-4o \
    ironvise audit "Review ./deploy for exposed secrets" --workspace ./service --policy soc2-audit

  LLM_BACKEND=ollama GUARD_REQUIRED=false ironvise audit "Check the nginx TLS settings" --max-steps 10

  ironvise audit "Audit the service" --interactive   # approve gated actions on the terminal`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.goal = args[0]
			o.maxStepsSet = cmd.Flags().Changed("max-steps")
			return a.runAudit(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.policy, "policy", "", "policy file or shipped pack name (see 'ironvise policy list')")
	f.StringVar(&o.policyPin, "policy-sha256", "", "refuse the policy unless its SHA-256 is this hex value")
	f.IntVar(&o.maxSteps, "max-steps", 0, "step limit (overrides AGENT_MAX_STEPS; the policy's max_steps still caps it)")
	f.StringVar(&o.workspace, "workspace", "", "workspace directory (default: the current directory)")
	f.BoolVar(&o.interactive, "interactive", false, "ask on the terminal when an approval gate opens")
	f.BoolVar(&o.guardFlags.NoGuard, "no-guard", false, "run without the guard LLM (needs --no-guard-confirmed; development only)")
	f.BoolVar(&o.guardFlags.NoGuardConfirmed, "no-guard-confirmed", false, "confirm --no-guard")
	return cmd
}

type auditOptions struct {
	goal, policy, policyPin, workspace string
	maxSteps                           int
	maxStepsSet, interactive           bool
	guardFlags                         guard.Flags
}

// agentRun is everything one agent session needs, built by audit or demo.
type agentRun struct {
	goal      string
	workspace string
	tw        *tripwire.Tripwire
	pol       *policy.Policy
	llm       llm.Client
	guard     *guardHandle
	approver  check.Approver
	limits    agent.Limits
}

func (a *app) runAudit(o auditOptions) error {
	r, err := a.loadRules(o.workspace, o.policy, o.policyPin)
	if err != nil {
		return err
	}
	cfg, ws, tw, pol := r.cfg, r.ws, r.tw, r.pol
	if o.maxStepsSet && (o.maxSteps < 1 || o.maxSteps > 100000) {
		return exitCode(ExitUsage, fmt.Errorf("--max-steps %d: must be from 1 to 100000", o.maxSteps))
	}
	client, err := llm.New(cfg.LLM, llm.Options{Logger: a.logger(), BuiltinScript: demo.Script()})
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	g, err := a.startGuard(cfg, o.guardFlags)
	if err != nil {
		return err
	}
	defer g.close()
	run := agentRun{goal: o.goal, workspace: ws, tw: tw, pol: pol, llm: client, guard: g,
		limits: limitsFor(cfg.Agent, pol, o.maxSteps, o.maxStepsSet)}
	if o.interactive {
		run.approver = newTerminalApprover(a.stdin, a.stderr, isTerminal(a.stderr))
	}
	out, err := a.runAgent(cfg, run)
	if err != nil {
		return err
	}
	if out.Status != ledger.StatusCompleted {
		return exitCode(ExitDenied, nil)
	}
	return nil
}

// limitsFor computes the effective limits
// (docs/design/checks.md#check-order): the step limit is min(policy
// max_steps, operator limit) when both are set, else whichever is set, else
// 20.
func limitsFor(ac config.Agent, pol *policy.Policy, flagSteps int, flagSet bool) agent.Limits {
	op, opSet := 0, false
	switch {
	case flagSet:
		op, opSet = flagSteps, true
	case ac.MaxStepsSet:
		op, opSet = ac.MaxSteps, true
	}
	steps := config.DefaultMaxSteps
	pmax, pset := 0, false
	if pol != nil {
		pmax, pset = pol.MaxSteps()
	}
	switch {
	case opSet && pset:
		steps = min(op, pmax)
	case opSet:
		steps = op
	case pset:
		steps = pmax
	}
	return agent.Limits{
		MaxSteps: steps, LLMErrorLimit: ac.LLMErrorLimit, CheckDenialLimit: ac.CheckDenialLimit,
		JustificationFailureLimit: ac.JustificationFailureLimit, GuardDenialLimit: ac.GuardDenialLimit,
		TokenBudget: ac.TokenBudget, SnapshotInterval: ac.SnapshotInterval, KeyRotationSteps: ac.KeyRotationSteps,
	}
}

// runAgent creates the session, runs the loop with a live step log and
// prints the summary.
func (a *app) runAgent(cfg *config.Config, r agentRun) (*agent.Outcome, error) {
	tier, err := a.sandboxTier("")
	if err != nil {
		return nil, err
	}
	scanner, err := a.scanner(cfg)
	if err != nil {
		return nil, err
	}
	l, err := a.openLedgerForWrite()
	if err != nil {
		return nil, err
	}
	defer closeLedger(l)
	polHash := ""
	if r.pol != nil {
		polHash = r.pol.SHA256()
	}
	s, err := l.CreateSession(a.ctx, ledger.SessionSpec{
		Goal: r.goal, PolicyHash: polHash, TripwireHash: r.tw.Config().SHA256, GuardRequired: r.guard.guard != nil,
		LLMBackend: r.llm.Backend(), LLMModel: r.llm.Model(), SandboxTier: string(tier.Name()), AgentLoop: true,
	})
	if err != nil {
		return nil, exitCode(ExitUsage, fmt.Errorf("create session: %w", err))
	}
	if cfg.Sandbox.Permissive {
		fmt.Fprintln(a.stderr, "ironvise: WARNING: ECTO_SANDBOX_PERMISSIVE=true — commands run WITHOUT OS confinement (each is recorded as permissive)")
	}
	p := newStepPrinter(a.stdout, isTerminal(a.stdout), a.lookup)
	p.header(s.ID.String(), r.goal, string(tier.Name()), r.llm, r.guard, r.limits.MaxSteps)
	env := &agent.Env{Ledger: l, Tier: tier, Scanner: scanner, Logger: a.logger(), SandboxEnv: a.sandboxEnv(), WriteTimeout: a.timing.write}
	stopEvidence, err := a.attachEvidence(cfg, l, env)
	if err != nil {
		return nil, err
	}
	defer stopEvidence()
	sess := agent.Open(env, s.ID, r.goal, agent.Config{
		Workspace: r.workspace, Tripwire: r.tw, Policy: r.pol,
		Guard: r.guard.checkGuard(), GuardDisabled: r.guard.skip, Approver: r.approver,
	})
	ro := agent.RunOptions{LLM: r.llm, Limits: r.limits, Report: p.step}
	if r.guard.guard != nil {
		ro.Guard = r.guard.guard
	}
	out, err := sess.Run(a.ctx, ro)
	if err != nil {
		return out, exitCode(ExitUsage, fmt.Errorf("session %s: %w", s.ID, err))
	}
	p.summary(out)
	return out, nil
}

// logger logs warnings and errors to stderr.
func (a *app) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// stepPrinter prints the live step log: aligned, coloured lines on a TTY
// (unless NO_COLOR), plain lines when piped.
type stepPrinter struct {
	w     io.Writer
	color bool
}

func newStepPrinter(w io.Writer, tty bool, look config.Lookup) *stepPrinter {
	_, noColor := look("NO_COLOR")
	return &stepPrinter{w: w, color: tty && !noColor}
}

func (p *stepPrinter) paint(code, s string) string {
	if !p.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p *stepPrinter) header(id, goal, tier string, c llm.Client, g *guardHandle, maxSteps int) {
	gs := "guard: off (" + g.skip + ")"
	if g.guard != nil {
		gs = "guard: on"
	}
	fmt.Fprintf(p.w, "session %s\ngoal:    %s\nmodel:   %s/%s · %s · sandbox: %s · max steps: %d\n\n", id, goal, c.Backend(), c.Model(), gs, tier, maxSteps)
}

func (p *stepPrinter) step(r agent.StepReport) {
	if r.LLMError != "" {
		fmt.Fprintf(p.w, "[%2d] %s model call failed: %s\n", r.Step, p.paint("33", "!"), oneLine(r.LLMError, 200))
		return
	}
	what := "(not a valid intent)"
	if r.Action != "" {
		what = fmt.Sprintf("%-11s %s", r.Action, oneLine(r.Target, 60))
	}
	if !r.Allowed {
		fmt.Fprintf(p.w, "[%2d] %-75s %s by %s: %s: %s\n", r.Step, what, p.paint("31;1", "DENY"), r.Check, r.Code, oneLine(r.Message, 120))
		return
	}
	res := p.paint("32", "ALLOW")
	switch {
	case r.Completed:
		res += " complete"
	case r.Tier != "":
		if r.ExitCode != nil {
			res += fmt.Sprintf(" %s exit %d", r.Tier, *r.ExitCode)
		} else {
			res += fmt.Sprintf(" %s %s", r.Tier, r.Signal)
		}
	}
	fmt.Fprintf(p.w, "[%2d] %-75s %s\n", r.Step, what, res)
	if r.Preview != "" {
		fmt.Fprintf(p.w, "     └ %s\n", oneLine(r.Preview, 110))
	}
	var notes []string
	if len(r.Labels) > 0 {
		notes = append(notes, "flagged: "+strings.Join(r.Labels, ", "))
	}
	if r.Redactions > 0 {
		notes = append(notes, fmt.Sprintf("%d span(s) redacted before the model sees it", r.Redactions))
	}
	if len(notes) > 0 {
		fmt.Fprintf(p.w, "     %s %s\n", p.paint("33;1", "⚠"), strings.Join(notes, "; "))
	}
}

func (p *stepPrinter) summary(o *agent.Outcome) {
	status := string(o.Status)
	if o.Status == ledger.StatusCompleted {
		status = p.paint("32;1", status)
	} else {
		status = p.paint("31;1", status)
	}
	var denied []string
	for c, n := range o.DeniedBy {
		denied = append(denied, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(denied)
	fmt.Fprintf(p.w, "\nsession %s %s (%s: %s)\n", o.SessionID, status, o.Stop, o.StopMessage)
	fmt.Fprintf(p.w, "  %d steps: %d executed, %d denied", o.Steps, o.Executed, o.Denied)
	if len(denied) > 0 {
		fmt.Fprintf(p.w, " (%s)", strings.Join(denied, ", "))
	}
	fmt.Fprintf(p.w, "; %d findings; %d tokens\n", len(o.Findings), o.Tokens)
	for _, f := range o.Findings {
		fmt.Fprintf(p.w, "  - [%s] %s\n", f.Severity, f.Title)
	}
	fmt.Fprintf(p.w, "  verify: ironvise verify-session %s\n  export: ironvise report %s --format html --output report.html\n", o.SessionID, o.SessionID)
}
