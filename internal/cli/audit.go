package cli

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/session"
	"github.com/ironvise/ironvise/internal/waitline"
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
--no-guard and --no-guard-confirmed are given.

Each model call may take LLM_TIMEOUT_SECS (default 120), retries included;
the guard's calls GUARD_TIMEOUT_SECS (default 30). On a terminal a live
"waiting for the model (12 s)" line shows on stderr while the model thinks.

In scripts, --quiet prints only the session id on stdout and --json one JSON
object with the session id, status, step, denial and finding counts, the
verification result and the exit code (docs/cli.md); with either, the live log
goes to stderr. The exit code is 0 when the session completed, 1 when it ended
otherwise, 2 on a usage or configuration error.`,
		Example: `  LLM_BACKEND=openai OPENAI_MODEL=gpt-4o-mini GUARD_LLM_BACKEND=openai GUARD_LLM_MODEL=gpt-4o \
    ironvise audit "Review ./deploy for exposed secrets" --workspace ./service --policy soc2-audit

  LLM_BACKEND=ollama GUARD_REQUIRED=false ironvise audit "Check the nginx TLS settings" --max-steps 10

  ironvise audit "Audit the service" --interactive   # approve gated actions on the terminal

  SESSION=$(ironvise audit --quiet "Review the deployment config" --workspace .)
  ironvise audit "Review the deployment config" --json 2>/dev/null | jq .findings`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.goal = args[0]
			o.maxStepsSet = cmd.Flags().Changed("max-steps")
			res, err := newResultOutput(o.asJSON, o.quiet)
			if err != nil {
				return err
			}
			return res.finish(a, a.runAudit(o, res))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.policy, "policy", "", "policy file or shipped pack name (see 'ironvise policy list')")
	f.StringVar(&o.policyPin, "policy-sha256", "", "refuse the policy unless its SHA-256 is this hex value")
	f.IntVar(&o.maxSteps, "max-steps", 0, "step limit (overrides AGENT_MAX_STEPS; the policy's max_steps still caps it)")
	f.StringVar(&o.workspace, "workspace", "", "workspace directory (default: the current directory)")
	f.StringVar(&o.workspaceMode, "workspace-mode", "", "this session's workspace mode, ro or overlay: narrows ECTO_SANDBOX_WORKSPACE and the policy, never widens them (default: theirs)")
	f.BoolVar(&o.interactive, "interactive", false, "ask on the terminal when an approval gate opens")
	addGuardFlags(cmd, &o.guardFlags)
	addResultFlags(cmd, &o.asJSON, &o.quiet)
	return cmd
}

// addGuardFlags gives cmd the two switches that turn the guard off. audit
// and serve share them, so that the hint a guard error prints
// (config.Guard.Validate) names flags both accept, with one meaning.
func addGuardFlags(cmd *cobra.Command, g *guard.Flags) {
	cmd.Flags().BoolVar(&g.NoGuard, "no-guard", false, "run without the guard LLM (needs --no-guard-confirmed; development only)")
	cmd.Flags().BoolVar(&g.NoGuardConfirmed, "no-guard-confirmed", false, "confirm --no-guard")
}

type auditOptions struct {
	goal, policy, policyPin, workspace string
	workspaceMode                      string
	maxSteps                           int
	maxStepsSet, interactive           bool
	asJSON, quiet                      bool
	guardFlags                         guard.Flags
}

func (a *app) runAudit(o auditOptions, res *resultOutput) error {
	r, err := a.loadRules(o.workspace, o.policy, o.policyPin)
	if err != nil {
		return err
	}
	cfg := r.cfg
	if o.maxStepsSet && (o.maxSteps < 1 || o.maxSteps > 100000) {
		return exitCode(ExitUsage, fmt.Errorf("--max-steps %d: must be from 1 to 100000", o.maxSteps))
	}
	// On a terminal, a live line shows how long the model has been
	// thinking; the retry warnings go through it so the two never mix.
	wait := waitline.ForWriter(a.stderr)
	client, err := session.NewLLM(cfg.LLM, slog.New(slog.NewTextHandler(wait, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	client = llm.WithWait(client, func() func() { return wait.Start("waiting for the model") })
	g, err := a.startGuard(cfg, o.guardFlags)
	if err != nil {
		return err
	}
	defer g.Close()
	spec := session.Spec{Goal: o.goal, Workspace: r.ws, Tripwire: r.tw, Policy: r.pol, LLM: client, Guard: g, WorkspaceMode: o.workspaceMode,
		Limits: session.Limits(cfg.Agent, r.pol, o.maxSteps, o.maxStepsSet)}
	if o.interactive {
		approver := newTerminalApprover(a.stdin, a.stderr, isTerminal(a.stderr))
		spec.Approvals = func(uuid.UUID) check.Approver { return approver }
	}
	out, err := a.runAgentTo(cfg, spec, res)
	if err != nil {
		return err
	}
	if out.Status != ledger.StatusCompleted {
		return exitCode(ExitDenied, nil)
	}
	return nil
}

// runAgent creates the session, runs the loop with a live step log and
// prints the summary.
func (a *app) runAgent(cfg *config.Config, spec session.Spec) (*agent.Outcome, error) {
	res, _ := newResultOutput(false, false)
	return a.runAgentTo(cfg, spec, res)
}

// runAgentTo is runAgent printing where res says, and recording the
// session in res once it has ended.
func (a *app) runAgentTo(cfg *config.Config, spec session.Spec, res *resultOutput) (*agent.Outcome, error) {
	rt, done, err := a.sessionRuntime(cfg, a.logger())
	if err != nil {
		return nil, err
	}
	defer done()
	s, err := session.Create(a.ctx, rt, spec)
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	if cfg.Sandbox.Permissive {
		fmt.Fprintln(a.stderr, "ironvise: WARNING: ECTO_SANDBOX_PERMISSIVE=true — commands run WITHOUT OS confinement (each is recorded as permissive)")
	}
	w := res.stdout(a)
	p := newStepPrinter(w, isTerminal(w), a.lookup)
	p.header(s.ID.String(), spec.Goal, string(rt.Tier.Name()), spec.LLM, spec.Guard, s.Limits().MaxSteps)
	out, err := s.Run(a.ctx, session.RunOptions{Report: p.step})
	res.record(a.ctx, rt.Ledger, s.ID)
	if err != nil {
		return out, exitCode(ExitUsage, fmt.Errorf("session %s: %w", s.ID, err))
	}
	p.summary(out)
	fmt.Fprintf(p.w, "  verify: %s\n  export: %s\n", a.command("verify-session", out.SessionID), a.command("report", out.SessionID, "--format", "html", "--output", "report.html"))
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

func (p *stepPrinter) header(id, goal, tier string, c llm.Client, g *session.Guard, maxSteps int) {
	gs := "guard: off (" + g.Skip + ")"
	if g.Enabled() {
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
	printSandboxNotes(p.w, "     ⓘ ironvise: ", r.SandboxNotes)
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
}
