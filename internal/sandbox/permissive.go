package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/ironvise/ironvise/internal/timerslack"
)

// PermissiveReason is the reason recorded with every permissive run.
const PermissiveReason = "ECTO_SANDBOX_PERMISSIVE=true: the command ran without OS confinement (development only)"

// Permissive is the tier of ECTO_SANDBOX_PERMISSIVE=true: the four checks
// still ran, but the command runs on the host with no OS confinement. Every
// run logs a warning and is recorded with Status permissive and tier
// "none". The environment is still scrubbed and the wall-clock timeout still
// applies.
type Permissive struct {
	opts Options
	log  *slog.Logger
}

// NewPermissive returns the permissive tier.
func NewPermissive(opts Options) *Permissive {
	opts = opts.WithDefaults()
	return &Permissive{opts: opts, log: opts.Logger}
}

// Name implements Tier.
func (p *Permissive) Name() TierName { return TierNone }

// Available implements Tier: permissive mode needs nothing.
func (p *Permissive) Available(context.Context) error { return nil }

// SelfTest implements Tier. There is no enforcement to verify; it only
// checks that a shell runs, and warns.
func (p *Permissive) SelfTest(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "ironvise-selftest-")
	if err != nil {
		return fmt.Errorf("sandbox: self-test workspace: %w", err)
	}
	defer os.RemoveAll(dir)
	r := p.Run(ctx, Request{Command: "echo ok", Workspace: dir})
	if r.ExitCode == nil || *r.ExitCode != 0 {
		return fmt.Errorf("%w: permissive shell did not run: %s", ErrSelfTest, r.Headline())
	}
	return nil
}

// Run implements Tier.
func (p *Permissive) Run(ctx context.Context, req Request) Result {
	start := time.Now()
	if err := ValidateRequest(req); err != nil {
		return Aborted(TierNone, err.Error(), time.Since(start))
	}
	// Security: this is the one place a command runs unconfined; say so
	// every time so it cannot go unnoticed in a log.
	p.log.Warn("sandbox permissive: running a command WITHOUT OS confinement (ECTO_SANDBOX_PERMISSIVE=true)",
		"workspace", req.Workspace)
	scratch, err := os.MkdirTemp("", "ironvise-scratch-")
	if err != nil {
		return Aborted(TierNone, fmt.Sprintf("create scratch dir: %v", err), time.Since(start))
	}
	defer os.RemoveAll(scratch)

	timeout := p.opts.EffectiveTimeout(req)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := shellArgv(req.Command)
	cmd := exec.CommandContext(rctx, argv[0], argv[1:]...)
	cmd.Dir = req.Workspace
	cmd.Env = CommandEnv(req.Env, map[string]string{
		"PATH": DefaultPath, "HOME": scratch, "TMPDIR": scratch, "PWD": req.Workspace,
	})
	var stdout, stderr Collector
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	killTree(cmd)
	cmd.WaitDelay = time.Second
	runErr := timerslack.Start(cmd.Start)
	if runErr == nil {
		runErr = cmd.Wait()
	}

	res := Ran(TierNone, time.Since(start), &stdout, &stderr)
	res.Status, res.Reason = StatusPermissive, PermissiveReason
	if cmd.ProcessState == nil {
		return Aborted(TierNone, fmt.Sprintf("start shell: %v", runErr), time.Since(start))
	}
	res.ExitCode, res.Signal = ProcessOutcome(cmd.ProcessState)
	if rctx.Err() != nil && ctx.Err() == nil {
		res.Reason += fmt.Sprintf("; wall-clock timeout of %d s exceeded", int(timeout.Seconds()))
	}
	return res
}
