package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/execclient"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/session"
)

// Exit codes of `ironvise exec` (docs/design/cli.md#exit-codes).
const (
	ExitExecDenied  = 126
	ExitExecAborted = sandbox.ExitSandboxAborted
)

func (a *app) execCommand() *cobra.Command {
	return execCobra(func(o execOptions) error { return a.interruptedAsAborted(a.runExec(o)) })
}

// execCobra is exec's command line, handing what it parsed to run. exec's
// thin path (internal/execclient) reads the same flags without cobra; the
// tests hold the two parsers to each other.
func execCobra(run func(execOptions) error) *cobra.Command {
	var o execOptions
	cmd := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARG...]",
		Short: "Run one command through the checks and the sandbox, recorded in the ledger",
		Long: `Builds a run_command intent from COMMAND, runs the checks (schema, policy,
tripwire, approval; the guard when GUARD_LLM_BACKEND is configured), then runs
the command in the selected sandbox tier. Every step is recorded in the ledger:
a new session per exec, or appended to a running session with --session.

The exit code is the command's own, 126 when a check denied it, 125 when the
sandbox aborted it, 128 + N when signal N killed it (the wall-clock timeout
included), 2 on a usage or configuration error.

The workspace is read-only inside the sandbox; the command writes under $TMPDIR.
When it fails because of the sandbox's rules (a write into the workspace, a
refused system call, a tool not on the sandbox's PATH), a line of IronVise's own
follows its output on stderr ("ironvise: the workspace is read-only …"); see
docs/reference/sandboxing.md, "When a command fails because of the sandbox".

A single COMMAND argument is a shell script ('ls -la | wc -l'); several
arguments are quoted and joined into one command line.

When 'ironvise serve' runs on the same data directory, the command is handed to
it over $ECTO_DATA_DIR/run/ironvise.sock and runs there with the same checks,
output and exit code; --no-daemon runs it in this process.

In scripts, --quiet prints only the session id on stdout and --json one JSON
object with the session id, status, step and denial counts, findings by
severity, the verification result and the exit code (docs/cli.md); with
either, the command's own output goes to stderr. The exit code is unchanged.`,
		Example: `  ironvise exec -- ls -la
  ironvise exec --workspace ./repo --justification "list recent commits" -- git log --oneline -5
  ironvise exec -- 'grep -rn TODO . | wc -l'
  ironvise exec --session 0193e1c2-… -- cat config.yaml
  ironvise exec --json -- ls -la 2>/dev/null | jq '{session_id, exit_code}'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Command = execclient.JoinCommand(args)
			return run(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Session, "session", "", "append to this running session instead of creating one")
	f.StringVar(&o.Workspace, "workspace", "", "workspace directory, read-only inside the sandbox (default: the current directory)")
	f.StringVar(&o.Policy, "policy", "", "policy file or shipped pack name (see 'ironvise policy list')")
	f.StringVar(&o.PolicySHA256, "policy-sha256", "", "refuse the policy unless its SHA-256 is this hex value")
	f.StringVar(&o.Justification, "justification", execclient.DefaultJustification, "why the command runs (recorded; at least min_justification_length characters)")
	f.StringVar(&o.WorkspaceMode, "workspace-mode", "", "this session's workspace mode, ro or overlay: narrows ECTO_SANDBOX_WORKSPACE and the policy, never widens them (default: theirs)")
	f.BoolVar(&o.NoDaemon, "no-daemon", false, "run in this process even when 'ironvise serve' answers on the data directory's socket")
	addResultFlags(cmd, &o.JSON, &o.Quiet)
	return cmd
}

// execOptions is exec's command line as parsed; the thin path parses into
// the same type.
type execOptions = execclient.Options

// interruptedAsAborted reports a start-up failure caused by an interrupt
// (Ctrl-C while the ledger opens or the session is created) as exec's
// aborted exit, not a usage error: the operator's command line was fine,
// and nothing ran. Denials and the command's own exit code pass unchanged.
func (a *app) interruptedAsAborted(err error) error {
	if err == nil {
		return nil
	}
	code := ExitUsage
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	// The thin path applies the same rule (execclient).
	if c, msg := execclient.AbortedIfInterrupted(a.ctx.Err(), code, err); c != code {
		return exitCode(c, msg)
	}
	return err
}

func (a *app) runExec(o execOptions) error {
	res, err := newResultOutput(o.JSON, o.Quiet)
	if err != nil {
		return err
	}
	if !o.NoDaemon {
		if handled, err := a.execViaDaemon(o, res); handled {
			return err
		}
	}
	return res.finish(a, a.interruptedAsAborted(a.execInProcess(o, res)))
}

// execInProcess runs exec in this process.
func (a *app) execInProcess(o execOptions, res *resultOutput) error {
	defer a.shortLived()()
	// The ledger opens (and checks its tail) while the rules load and the
	// sandbox tier starts: neither needs the other.
	takeLedger, dropLedger, err := a.openingLedger()
	if err != nil {
		return err
	}
	defer dropLedger()
	p, err := a.loadProtection(o.Workspace)
	if err != nil {
		return err
	}
	// The tier starts its one launcher now: the launcher's own start-up
	// (the embedded launcher program, its namespaces) then runs while
	// the rest of the rules load and the ledger opens, where it used to
	// keep the command waiting after the checks.
	a.oneCommand = true
	tier, err := a.sandboxTier("")
	if err != nil {
		return err
	}
	r, err := a.rulesOf(p, o.Policy, o.PolicySHA256)
	if err != nil {
		sandbox.CloseTier(tier)
		return err
	}
	rt, done, err := a.sessionRuntimeOn(r.cfg, nil, tier, takeLedger)
	if err != nil {
		return err
	}
	defer done()
	return a.execSession(r, rt, o, res)
}

// execSession runs exec's one step on rt and prints what it produced,
// recording the session in result: the in-process path and the daemon
// (execdaemon.go) share it.
func (a *app) execSession(r *rules, rt *session.Runtime, o execOptions, result *resultOutput) error {
	ctx := a.ctx
	cfg := r.cfg
	g, err := a.optionalGuard(cfg)
	if err != nil {
		return err
	}
	defer g.Close()

	if cfg.Sandbox.Permissive {
		fmt.Fprintln(a.stderr, "ironvise: WARNING: ECTO_SANDBOX_PERMISSIVE=true — the command runs WITHOUT OS confinement (recorded as permissive)")
	}
	spec := session.Spec{Goal: "exec: " + o.Command, Workspace: r.ws, Tripwire: r.tw, Policy: r.pol, Guard: g, WorkspaceMode: o.WorkspaceMode}
	var sess *session.Session
	step := 1
	if o.Session != "" {
		var id uuid.UUID
		var goal string
		id, goal, step, err = a.resumeSession(ctx, rt.Ledger, o.Session)
		if err != nil {
			return err
		}
		// Bind would run the command without network when the policy no
		// longer composes with the configured network; say why instead.
		if _, err := session.EgressRules(rt.Network, r.pol); err != nil {
			return exitCode(ExitUsage, err)
		}
		// A session keeps the workspace mode it started with: its
		// layers and change sets belong to it.
		mode, err := session.BoundWorkspaceMode(ctx, rt, id)
		if err != nil {
			return exitCode(ExitUsage, err)
		}
		if o.WorkspaceMode != "" && o.WorkspaceMode != mode {
			return exitCode(ExitUsage, fmt.Errorf("--workspace-mode %s: session %s runs in workspace mode %s, which a running session keeps; drop --workspace-mode, or start a new session", o.WorkspaceMode, id, mode))
		}
		spec.WorkspaceMode = mode
		sess = session.Bind(rt, id, goal, spec)
	} else if sess, err = session.Prepare(rt, spec); err != nil {
		// A new session commits with its step's records: two durable
		// commits for the whole exec (session.Prepare).
		return exitCode(ExitUsage, err)
	}
	raw, err := json.Marshal(map[string]any{
		"action": "run_command", "params": map[string]string{"command": o.Command}, "justification": o.Justification,
	})
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	res, err := sess.Step(ctx, step, string(raw), agent.SourceAPI)
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("ledger: %w (nothing more was run)", err))
	}
	// What the step produced is shown only once it is recorded: the
	// results of a new session's step commit with its end.
	var out, errOut bytes.Buffer
	code, status := a.execOutcome(ctx, sess, res, &out, &errOut)
	if o.Session == "" {
		// The end is recorded even when ctx was cancelled while the
		// command ran (Ctrl-C): without it the session stays running
		// until another process's recovery marks it failed.
		if _, err := sess.End(ctx, status, "operator:cli"); err != nil {
			return exitCode(ExitUsage, fmt.Errorf("%w (the command's output is not shown: it could not be recorded)", err))
		}
	}
	result.record(ctx, rt.Ledger, sess.ID)
	result.stdout(a).Write(out.Bytes())
	a.stderr.Write(errOut.Bytes())
	fmt.Fprintf(a.stderr, "ironvise: recorded in session %s (verify: %s)\n", sess.ID, a.command("verify-session", sess.ID.String()))
	if code != 0 {
		return exitCode(code, nil)
	}
	return nil
}

// execOutcome writes what the command's step produced to stdout and
// stderr and returns exec's exit code and the status the session ends
// with.
func (a *app) execOutcome(ctx context.Context, sess *session.Session, res *agent.StepResult, stdout, stderr io.Writer) (int, ledger.Status) {
	code := 0
	status := ledger.StatusCompleted
	switch {
	case !res.Check.Allowed():
		d := res.Check.Decisive
		fmt.Fprintf(stderr, "ironvise: denied by %s: %s: %s\n", d.Check, d.Code, d.Message)
		code, status = ExitExecDenied, ledger.StatusAborted
	case res.Sandbox != nil:
		sr := res.Sandbox
		// Security: exec is often an agent's shell, so what it prints
		// reaches a model: the output is the recorded one, credentials
		// replaced by the session's tagged placeholders.
		red := sess.Agent.Redactor()
		fmt.Fprint(stdout, red.String(sr.Stdout))
		fmt.Fprint(stderr, red.String(sr.Stderr))
		printSandboxNotes(stderr, "ironvise: ", res.SandboxNotes)
		code = sr.ProcessExitCode()
		switch sr.Status {
		case sandbox.StatusAborted:
			fmt.Fprintf(stderr, "ironvise: sandbox aborted: %s\n", sr.Reason)
			status = ledger.StatusAborted
		case sandbox.StatusTimeout:
			fmt.Fprintf(stderr, "ironvise: %s\n", sr.Reason)
		case sandbox.StatusPermissive:
			fmt.Fprintf(stderr, "ironvise: WARNING: %s\n", sr.Reason)
		}
	}
	if w := res.Workspace; w.Failed() {
		switch {
		case res.Sandbox == nil:
			// Overlay mode could not prepare the step's layer: nothing ran
			// (fail closed).
			fmt.Fprintf(stderr, "ironvise: the command was not run: the workspace overlay could not be prepared: %s\n", sess.Agent.Redactor().String(w.Err))
			code, status = ExitExecAborted, ledger.StatusAborted
		case len(w.Forbidden) > 0 || w.Err != "":
			// The command ran but its changes were discarded (a forbidden
			// path, or a change set that could not be read): the action
			// failed even when the command itself succeeded.
			if code == 0 {
				code = ExitExecDenied
			}
		}
	}
	if ctx.Err() != nil && code == 0 {
		// Interrupted before the command could run (or finish): never a
		// success, and the session records it as aborted.
		fmt.Fprintf(stderr, "ironvise: interrupted: %v; the command did not complete\n", ctx.Err())
		code, status = ExitExecAborted, ledger.StatusAborted
	}
	if res.Halted != "" {
		status = ledger.StatusAborted
		fmt.Fprintf(stderr, "ironvise: output matched observation rule %q (abort); session aborted\n", res.Halted)
	}
	return code, status
}

// resumeSession checks that a session can take another step and returns
// its goal and the next step number.
func (a *app) resumeSession(ctx context.Context, l *ledger.Ledger, ref string) (uuid.UUID, string, int, error) {
	id, err := uuid.Parse(ref)
	if err != nil {
		return uuid.Nil, "", 0, exitCode(ExitUsage, fmt.Errorf("--session %q is not a session id", ref))
	}
	s, err := l.Session(ctx, id)
	if err != nil {
		return uuid.Nil, "", 0, exitCode(ExitUsage, fmt.Errorf("--session %s: %w", id, err))
	}
	if s.Status != ledger.StatusRunning || s.Sealed() {
		return uuid.Nil, "", 0, exitCode(ExitUsage, fmt.Errorf("--session %s is %s%s: start a new session instead", id, s.Status, map[bool]string{true: " and sealed"}[s.Sealed()]))
	}
	steps, err := countSteps(ctx, l, id)
	if err != nil {
		return uuid.Nil, "", 0, exitCode(ExitUsage, err)
	}
	return id, s.Goal, steps + 1, nil
}

// countSteps counts the intents proposed so far in a session.
func countSteps(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (int, error) {
	n := 0
	var from uint64
	for {
		evs, err := l.Events(ctx, id, from, 1000)
		if err != nil {
			return 0, fmt.Errorf("read session %s: %w", id, err)
		}
		for _, e := range evs {
			if e.Type == ledger.TypeIntentProposed {
				n++
			}
		}
		if len(evs) < 1000 {
			return n, nil
		}
		from = evs[len(evs)-1].Seq + 1
	}
}

func closeLedger(l *ledger.Ledger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = l.Close(ctx)
}
