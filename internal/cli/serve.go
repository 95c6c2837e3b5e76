//go:build !noserver

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/server"
	"github.com/ironvise/ironvise/internal/timerslack"
)

func (a *app) serveCommand() *cobra.Command {
	var (
		verifyFull bool
		workspace  string
		guardFlags guard.Flags
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: serveShort,
		Long: `Starts the IronVise server (docs/api.md): the REST API that the EctoLedger SDK
clients (0.6.3) speak, plus the intents endpoint for external agents, the live
event stream (SSE), Prometheus metrics at /metrics and the dashboard at /.

Before it listens, serve opens and migrates the ledger, bootstraps the tokens,
verifies the ledger's tail (the whole ledger with --verify-full) and runs the
sandbox self-test; it refuses to start if any of these fails (the sandbox
self-test only warns with ECTO_SANDBOX_PERMISSIVE=true). Without OBSERVER_TOKEN
it prints a one-run admin token once.

Sessions created through the API work in the workspace (--workspace, default
the current directory) under the data dir's tripwire.json and the policy each
session names. Their guard (a second LLM) is required unless
GUARD_REQUIRED=false or both --no-guard and --no-guard-confirmed are given, as
for audit. SIGINT or SIGTERM stops it gracefully: running sessions are
stopped and their end recorded, and a final checkpoint is written.`,
		Example: `  OBSERVER_TOKEN=$(openssl rand -hex 32) ironvise serve --workspace ./service
  ECTO_BIND_HOST=0.0.0.0 ECTO_BIND_PORT=8080 ironvise serve --verify-full
  LLM_BACKEND=mock GUARD_REQUIRED=false ironvise serve   # offline, for trying the API`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return a.runServe(workspace, verifyFull, guardFlags) },
	}
	cmd.Flags().BoolVar(&verifyFull, "verify-full", false, "verify the whole ledger (every chain, the whole Merkle log) before listening")
	cmd.Flags().StringVar(&workspace, "workspace", "", "workspace directory of API sessions (default: the current directory)")
	addGuardFlags(cmd, &guardFlags)
	return cmd
}

func (a *app) runServe(workspace string, verifyFull bool, guardFlags guard.Flags) error {
	if a.exits {
		// serve runs itself again with a coarse timer slack first, which
		// saves CPU on every command (package timerslack); a test's
		// in-process serve is not its process's to replace.
		if err := timerslack.Reexec(); err != nil {
			fmt.Fprintf(a.stderr, "ironvise: warning: %v; serve goes on with the timer slack it has, which costs more CPU per command\n", err)
		}
	}
	cfg, err := a.config()
	if err != nil {
		return err
	}
	ws, err := resolveWorkspace(workspace)
	if err != nil {
		return err
	}
	// The protected paths are read once, at start, like the workspace:
	// every API session's tripwire and the tier share them.
	tc, err := a.loadTripwireConfig(cfg, ws)
	if err != nil {
		return err
	}
	protect, err := a.protection(cfg, tc.ProtectedPaths)
	if err != nil {
		return err
	}
	if err := checkWorkspace(ws, protect); err != nil {
		return err
	}
	tier, err := a.sandboxTier("")
	if err != nil {
		return err
	}
	defer sandbox.CloseTier(tier)
	if guardFlags.NoGuard && guardFlags.NoGuardConfirmed {
		fmt.Fprintln(a.stderr, "ironvise: WARNING: --no-guard: no guard LLM reviews the actions of any session this server runs (development only)")
	}
	ctx, stop := signal.NotifyContext(a.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := server.New(ctx, server.Options{
		Config: cfg, Lookup: a.lookup, Workspace: ws, Protected: protect, Tier: tier, VerifyFull: verifyFull, GuardFlags: guardFlags, Version: version,
		Stdout: a.stdout, Stderr: a.stderr, Logger: a.logger(), SandboxEnv: a.sandboxEnv(),
		Local: a.daemonExec,
	})
	if err != nil {
		if errors.Is(err, ledger.ErrTampered) {
			return exitCode(ExitDenied, err)
		}
		return exitCode(ExitUsage, err)
	}
	if err := srv.Start(ctx); err != nil {
		srv.Shutdown(context.WithoutCancel(ctx))
		return exitCode(ExitUsage, err)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return exitCode(ExitUsage, err)
	}
	return nil
}
