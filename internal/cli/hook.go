package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/hook"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/session"
)

// Hook timing: a hook must answer before the agent gives up on it (Claude
// Code's default command timeout is 60 s, and a timed-out hook does not
// block), so IronVise blocks on its own first.
const (
	defaultHookTimeout = 30 * time.Second
	hookLockTimeout    = 20 * time.Second
	// hookLease is how long a hook session stays running without an
	// event before another process's recovery may mark it failed: hook
	// processes come and go, the agent session lasts.
	hookLease = 24 * time.Hour
)

type hookOptions struct {
	workspace, policy, policyPin string
	timeout                      time.Duration
}

func (a *app) hookCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Check an agent's tool calls from its hooks (Claude Code, Codex)",
		Long: `Answers the hook events of agents that run their own tools. Each tool call
becomes an intent (Bash → run_command, Read/Grep/Glob/LS → read_file checks,
WebFetch → http_get, Write/Edit/MultiEdit/NotebookEdit/apply_patch → write_file)
and passes the checks; the decision is recorded in one IronVise session per
agent session, sealed when the agent's session ends. Tool output is scanned and
recorded; the agent is told when it holds a prompt injection.

Every failure blocks: a payload that is not JSON, a missing tool name, a locked
or unwritable ledger, a timeout. See docs/integrations.md#hooks.`,
		Args: cobra.NoArgs,
		// A settings entry that names no agent must not pass as "go on":
		// help with exit 0 would let every call run.
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitCode(ExitUsage, fmt.Errorf("name the agent: %s hook claude-code|codex (or install, doctor)", a.program()))
		},
	}
	for _, ag := range hook.Agents {
		cmd.AddCommand(a.hookAgentCommand(ag))
	}
	cmd.AddCommand(a.hookInstallCommand(), a.hookDoctorCommand())
	return cmd
}

func (a *app) hookAgentCommand(ag hook.Agent) *cobra.Command {
	var o hookOptions
	cmd := &cobra.Command{
		Use:   string(ag),
		Short: "Answer one " + ag.Title() + " hook event read on stdin",
		Long: `Reads one ` + ag.Title() + ` hook event (JSON) on stdin and answers in its
contract: exit 0 to let the call go on (with JSON on stdout for "ask" or a
warning about the tool's output), exit 2 with the reason on stderr to block.
The workspace is --workspace, else $CLAUDE_PROJECT_DIR, else the event's cwd.`,
		Example: `  echo '{"session_id":"s1","cwd":"/repo","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}' | ironvise hook ` + string(ag),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			defer a.shortLived()()
			ans := a.hookAnswer(ag, o)
			stdout, stderr, code := ag.Command(ans)
			a.stdout.Write(stdout)
			fmt.Fprint(a.stderr, stderr)
			if code != hook.ExitOK {
				return exitCode(code, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.workspace, "workspace", "", "workspace directory (default: $CLAUDE_PROJECT_DIR, else the event's cwd)")
	cmd.Flags().StringVar(&o.policy, "policy", "", "policy file or shipped pack name (see 'ironvise policy list')")
	cmd.Flags().StringVar(&o.policyPin, "policy-sha256", "", "refuse the policy unless its SHA-256 is this hex value")
	cmd.Flags().DurationVar(&o.timeout, "timeout", defaultHookTimeout, "block when no decision is reached within this time")
	return cmd
}

// hookAnswer decides one event read on stdin. It always returns an
// answer: every failure, a panic included, is a block.
func (a *app) hookAnswer(ag hook.Agent, o hookOptions) (ans hook.Answer) {
	defer func() {
		if r := recover(); r != nil {
			ans = hook.Blocked("", fmt.Errorf("internal error: %v", r))
		}
	}()
	raw, err := hook.ReadEvent(a.stdin)
	if err != nil {
		return hook.Blocked("", err)
	}
	ev, err := hook.ParseEvent(raw)
	if err != nil {
		return hook.Blocked("", err)
	}
	switch ev.HookEventName {
	case hook.EventPreToolUse, hook.EventPostToolUse, hook.EventSessionStart, hook.EventSessionEnd:
	default:
		// A prompt or a turn's end proposes nothing to check.
		return hook.Answer{Decision: hook.Allow, Event: ev.HookEventName}
	}
	if o.timeout <= 0 {
		o.timeout = defaultHookTimeout
	}
	ctx, cancel := context.WithTimeout(a.ctx, o.timeout)
	defer cancel()
	done := make(chan hook.Answer, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- hook.Blocked(ev.HookEventName, fmt.Errorf("internal error: %v", r))
			}
		}()
		done <- a.decideHook(ctx, ag, ev, o)
	}()
	select {
	case ans = <-done:
		return ans
	case <-ctx.Done():
		return hook.Blocked(ev.HookEventName, fmt.Errorf("no decision within %s (--timeout): %w", o.timeout, ctx.Err()))
	}
}

// decideHook opens what one event is decided with — the agent session's
// state under its lock, the rules, the ledger — and decides it.
func (a *app) decideHook(ctx context.Context, ag hook.Agent, ev *hook.Event, o hookOptions) hook.Answer {
	fail := func(err error) hook.Answer { return hook.Blocked(ev.HookEventName, err) }
	cfg, err := a.config()
	if err != nil {
		return fail(errors.Unwrap(err))
	}
	st, err := hook.Lock(filepath.Join(cfg.DataDir, "hooks"), ag, ev.SessionID, hookLockTimeout)
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	ws := o.workspace
	if ws == "" && st.Session != "" && !st.Sealed {
		ws = st.Workspace // one workspace for the whole session
	}
	if ws == "" {
		ws, _ = a.lookup("CLAUDE_PROJECT_DIR")
	}
	if ws == "" {
		ws = ev.Cwd
	}
	if ws == "" {
		return fail(errors.New("no workspace: the event has no cwd; pass --workspace DIR"))
	}
	// One lease owner per agent session: the session outlives this
	// process, and the next hook process renews its lease.
	sum := sha256.Sum256([]byte(ev.SessionID))
	a.timing.owner = "hook/" + string(ag) + "/" + hex.EncodeToString(sum[:8])
	if a.timing.lease == 0 {
		a.timing.lease = hookLease
	}
	// The ledger opens (and checks its tail) while the rules load, as a
	// standalone exec's does: neither needs the other. A rules error is
	// still the one reported when both fail.
	takeLedger, dropLedger, err := a.openingLedger()
	if err != nil {
		return fail(unwrapExit(err))
	}
	defer dropLedger()
	a.hookRequest = true
	r, err := a.loadRules(ws, o.policy, o.policyPin)
	if err != nil {
		return fail(unwrapExit(err))
	}
	if err := policyOutsideWorkspace(o.policy, r.ws); err != nil {
		return fail(err)
	}
	l, err := takeLedger()
	if err != nil {
		return fail(unwrapExit(err))
	}
	defer closeLedger(l)
	if err := l.RenewLeasesIfDue(ctx); err != nil {
		return fail(err)
	}
	scanner, err := a.scanner(cfg)
	if err != nil {
		return fail(unwrapExit(err))
	}
	var tier sandbox.Tier = hook.AgentTier{}
	rt := &session.Runtime{Ledger: l, Tier: tier, Scanner: scanner, WriteTimeout: a.timing.write}
	stop, err := a.attachEvidence(cfg, l, rt)
	if err != nil {
		return fail(unwrapExit(err))
	}
	defer stop()
	g, err := a.optionalGuard(cfg)
	if err != nil {
		return fail(unwrapExit(err))
	}
	defer g.Close()
	env := &hook.Env{Agent: ag, Runtime: rt, Workspace: r.ws, Tripwire: r.tw, Policy: r.pol, Guard: g, MCPRules: hook.PolicyMCPRules{Policy: r.pol}}
	return env.Handle(ctx, st, ev)
}

// isHookEvent reports whether args run `hook <agent>`: a command that
// answers an agent's hook event, in the agent's working directory.
func isHookEvent(args []string) bool {
	if len(args) < 3 || args[1] != "hook" {
		return false
	}
	_, err := hook.ParseAgent(args[2])
	return err == nil
}

// policyOutsideWorkspace refuses a policy file the agent could rewrite.
func policyOutsideWorkspace(ref, ws string) error {
	if !strings.ContainsAny(ref, `/`+string(filepath.Separator)) {
		return nil // a name: the packs and the data directory only (hookRequest)
	}
	abs, err := filepath.Abs(ref)
	if err != nil {
		return err
	}
	if res, err := filepath.EvalSymlinks(abs); err == nil {
		abs = res
	}
	if secretpaths.WithinFold(abs, ws, runtime.GOOS != "linux") {
		return fmt.Errorf("the policy file %s lies in the workspace %s, which the agent writes: move it out (the data directory's policies/ is protected) or name a shipped pack", abs, ws)
	}
	return nil
}

// unwrapExit is the error inside an exit code, for a block's reason.
func unwrapExit(err error) error {
	var ee *exitError
	if errors.As(err, &ee) && ee.err != nil {
		return ee.err
	}
	return err
}
