package cli

import (
	"fmt"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/demo"
	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/session"
	"github.com/ironvise/ironvise/internal/tripwire"
)

func (a *app) demoCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run a complete scripted audit of a bundled sample service (no LLM, no network, no setup)",
		Long: `Writes a small sample service with real misconfigurations to a directory
beside the data directory ($ECTO_DATA_DIR-demo-workspace: never inside it,
which no command may see) and audits it with the deterministic mock LLM
(which also plays the guard), under the shipped ISO/IEC 42001 policy pack and
the real sandbox. You will see allowed reads and commands, a command blocked by
the tripwire, a path escape blocked, a policy denial, a prompt injection caught
in a file, a guard denial, findings backed by verified evidence, and the
session's verification. The session stays in your ledger: verify or export it
afterwards with the commands printed at the end.`,
		Example: `  ironvise demo
  ECTO_DATA_DIR=$(mktemp -d) ironvise demo   # keep your own ledger untouched`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return a.runDemo() },
	}
}

func (a *app) runDemo() error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	// The workspace lies beside the data directory: inside it, the
	// sandbox would hide the workspace itself.
	ws, err := demo.WriteWorkspace(filepath.Clean(cfg.DataDir) + "-demo-workspace")
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	// The demo's rules are fixed (no tripwire.json), so only the
	// mandatory protected paths apply.
	protect, err := a.protection(cfg, nil)
	if err != nil {
		return err
	}
	if err := checkWorkspace(ws, protect); err != nil {
		return err
	}
	// The demo's rules are fixed so that it shows the same run everywhere:
	// the default tripwire (not the data dir's tripwire.json) and a shipped
	// pack.
	tc, err := tripwire.DefaultConfig(tripwire.LoadOptions{Workspace: ws})
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	tw := tripwire.New(tc, tripwire.Options{Workspace: ws, Protected: protect})
	pol, err := policy.Load(demo.Policy, policy.Options{})
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	mock := config.LLM{Backend: llm.BackendMock}
	client, err := session.NewLLM(mock, a.logger())
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	// The mock guard runs in a real guard worker, over the authenticated
	// protocol, replaying the script's guard replies.
	plan := guard.Plan{Enabled: true, Guard: config.Guard{Required: true, Backend: llm.BackendMock, Model: llm.MockModel, TimeoutSecs: 30}}
	g, err := session.StartGuard(a.ctx, plan, session.GuardOptions{Lookup: a.lookup, LLM: mock, Logger: a.logger()})
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	defer g.Close()
	fmt.Fprintf(a.stdout, "IronVise demo: auditing the sample service in %s\npolicy: %s (%s)\n\n", ws, pol.Name(), pol.SHA256()[:16])
	// The demo's limits are fixed too: 20 steps, the other limits at
	// their defaults.
	out, err := a.runAgent(cfg, session.Spec{Goal: demo.Goal, Workspace: ws, Tripwire: tw, Policy: pol, LLM: client, Guard: g,
		Limits: session.Limits(config.Agent{}, nil, 20, true)})
	if err != nil {
		return err
	}
	l, err := a.openLedger()
	if err != nil {
		return err
	}
	defer closeLedger(l)
	v, err := evidence.VerifySession(a.ctx, l, uuid.MustParse(out.SessionID))
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("verify session: %w", err))
	}
	fmt.Fprintln(a.stdout, "\nverification of the recorded session:")
	a.printVerifyText(v)
	if out.Status != ledger.StatusCompleted || !v.OK {
		return exitCode(ExitDenied, fmt.Errorf("the demo did not complete as scripted (status %s)", out.Status))
	}
	return nil
}
