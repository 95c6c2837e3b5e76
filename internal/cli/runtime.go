package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/scan"
)

// scanner builds the output scanner at SCANNER_SENSITIVITY.
func (a *app) scanner(cfg *config.Config) (*scan.Scanner, error) {
	sens, err := scan.ParseSensitivity(cfg.Scanner.Sensitivity)
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	s, err := scan.New(sens)
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	return s, nil
}

// openLedgerForWrite opens the ledger for a command that records: it marks
// sessions of dead processes failed (docs/design/ledger.md#session-lifecycle)
// and runs the startup verification (docs/design/ledger.md#verification),
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
func (a *app) sandboxEnv() []string {
	var env []string
	for _, k := range []string{"LANG", "LANGUAGE", "TZ", "TERM", "NO_COLOR", "COLUMNS", "LINES", "LC_ALL", "LC_CTYPE", "LC_MESSAGES"} {
		if v, ok := a.lookup(k); ok && sandbox.EnvAllowed(k) {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// guardHandle is the guard of one command: a running host, or the reason
// it is skipped.
type guardHandle struct {
	guard *guard.Host
	skip  string
}

func (g *guardHandle) checkGuard() check.Guard {
	if g.guard == nil {
		return nil
	}
	return g.guard
}

func (g *guardHandle) close() {
	if g.guard == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = g.guard.Close(ctx)
}

// optionalGuard is the guard of exec and check: it runs only when
// GUARD_LLM_BACKEND is configured (and GUARD_REQUIRED is not false).
func (a *app) optionalGuard(cfg *config.Config) (*guardHandle, error) {
	if cfg.Guard.Backend == "" || !cfg.Guard.Required {
		return &guardHandle{skip: guard.SkipUnconfigured}, nil
	}
	return a.startGuard(cfg, guard.Flags{})
}

// startGuard resolves the guard configuration and starts the host.
func (a *app) startGuard(cfg *config.Config, flags guard.Flags) (*guardHandle, error) {
	plan, err := guard.Resolve(cfg.Guard, cfg.LLM.Backend, flags)
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	if !plan.Enabled {
		return &guardHandle{skip: plan.SkipMessage}, nil
	}
	opts, err := guard.ConfigHostOptions(a.lookup, plan.Guard, cfg.LLM)
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	h, err := guard.NewHost(opts)
	if err != nil {
		return nil, exitCode(ExitUsage, fmt.Errorf("start the guard: %w", err))
	}
	return &guardHandle{guard: h}, nil
}
