package cli

import (
	"fmt"
	"log/slog"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/session"
)

// scanner builds the output scanner at SCANNER_SENSITIVITY.
func (a *app) scanner(cfg *config.Config) (*scan.Scanner, error) {
	s, err := session.NewScanner(cfg.Scanner.Sensitivity)
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	return s, nil
}

// sessionRuntime opens what a recording command's session runs on: the
// sandbox tier, the scanner, the ledger (for writing) and SIEM egress. log
// receives the sessions' operational messages (nil: none). The returned
// done delivers the queued notifications, then closes the ledger.
func (a *app) sessionRuntime(cfg *config.Config, log *slog.Logger) (*session.Runtime, func(), error) {
	tier, err := a.sandboxTier("")
	if err != nil {
		return nil, nil, err
	}
	scanner, err := a.scanner(cfg)
	if err != nil {
		sandbox.CloseTier(tier)
		return nil, nil, err
	}
	l, err := a.openLedgerForWrite()
	if err != nil {
		sandbox.CloseTier(tier)
		return nil, nil, err
	}
	rt := &session.Runtime{Ledger: l, Tier: tier, Scanner: scanner, Logger: log, SandboxEnv: a.sandboxEnv(), WriteTimeout: a.timing.write,
		Network: cfg.Sandbox.Network, Workspace: cfg.Sandbox.Workspace, OverlayRoot: session.OverlayRoot(cfg.DataDir)}
	stopEvidence, err := a.attachEvidence(cfg, l, rt)
	if err != nil {
		closeLedger(l)
		sandbox.CloseTier(tier)
		return nil, nil, err
	}
	return rt, func() {
		stopEvidence()
		closeLedger(l)
		sandbox.CloseTier(tier)
	}, nil
}

// openLedgerForWrite opens the ledger for a command that records: it marks
// sessions of dead processes failed and runs the startup verification,
// refusing to write on top of a tampered ledger.
func (a *app) openLedgerForWrite() (*ledger.Ledger, error) {
	l, err := a.openLedger()
	if err != nil {
		return nil, err
	}
	if _, err := l.Recover(a.ctx); err != nil {
		closeLedger(l)
		return nil, exitCode(ExitUsage, fmt.Errorf("ledger recovery: %w", err))
	}
	rep, err := l.VerifyStartup(a.ctx)
	if err == nil {
		err = rep.Err()
	}
	if err != nil {
		closeLedger(l)
		return nil, exitCode(ExitUsage, fmt.Errorf("ledger startup verification failed, refusing to record on top of it (run 'ironvise verify-session' on the sessions named): %w", err))
	}
	return l, nil
}

// sandboxEnv is the candidate environment of sandboxed commands: the
// allowlisted variables only (the tier filters again).
func (a *app) sandboxEnv() []string { return session.SandboxEnv(a.lookup) }

// optionalGuard is the guard of exec: it runs only when GUARD_LLM_BACKEND
// is configured (and GUARD_REQUIRED is not false).
func (a *app) optionalGuard(cfg *config.Config) (*session.Guard, error) {
	if cfg.Guard.Backend == "" || !cfg.Guard.Required {
		return session.GuardSkipped(guard.SkipUnconfigured), nil
	}
	return a.startGuard(cfg, guard.Flags{})
}

// startGuard resolves the guard configuration and starts the worker.
func (a *app) startGuard(cfg *config.Config, flags guard.Flags) (*session.Guard, error) {
	plan, err := guard.Resolve(cfg.Guard, cfg.LLM.Backend, flags)
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	g, err := session.StartGuard(a.ctx, plan, session.GuardOptions{Lookup: a.lookup, LLM: cfg.LLM, EnclaveRoots: a.enclaveRoots})
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	return g, nil
}
