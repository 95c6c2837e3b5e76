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
	return a.sessionRuntimeOn(cfg, log, nil, a.openLedgerForWrite)
}

// sessionRuntimeOn is sessionRuntime on tier, when not nil (it is closed
// on failure, as the runtime's done closes it), and with the ledger from
// openLedger, which it calls once the tier and the scanner are ready (and
// not at all when either fails).
func (a *app) sessionRuntimeOn(cfg *config.Config, log *slog.Logger, tier sandbox.Tier, openLedger func() (*ledger.Ledger, error)) (*session.Runtime, func(), error) {
	if tier == nil {
		var err error
		if tier, err = a.sandboxTier(""); err != nil {
			return nil, nil, err
		}
	}
	scanner, err := a.scanner(cfg)
	if err != nil {
		sandbox.CloseTier(tier)
		return nil, nil, err
	}
	l, err := openLedger()
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

// openingLedger starts openLedgerForWrite on a goroutine of its own, for a
// command that has other start-up work to do meanwhile (exec loads its
// rules and starts its sandbox tier: 2–4 ms of CPU that need no ledger).
// take returns what it opened, waiting for it; drop closes it, unless take
// returned it, and must run on every path (deferred). The configuration is
// loaded first, so that the two goroutines only read it.
func (a *app) openingLedger() (take func() (*ledger.Ledger, error), drop func(), err error) {
	if _, err := a.config(); err != nil {
		return nil, nil, err
	}
	type opened struct {
		l   *ledger.Ledger
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		l, err := a.openLedgerForWrite()
		ch <- opened{l, err}
	}()
	// take and drop run on the caller's goroutine: plain state will do.
	var (
		got      opened
		received bool
		taken    bool
	)
	receive := func() {
		if !received {
			got, received = <-ch, true
		}
	}
	take = func() (*ledger.Ledger, error) {
		receive()
		taken = true
		return got.l, got.err
	}
	drop = func() {
		receive()
		if !taken && got.l != nil {
			closeLedger(got.l)
		}
	}
	return take, drop, nil
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
	verify := l.VerifyStartup
	if a.oneShot {
		// One command or hook event: it writes to no running session but
		// its own (ledger.VerifyStartupOwned).
		verify = l.VerifyStartupOwned
	}
	rep, err := verify(a.ctx)
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
