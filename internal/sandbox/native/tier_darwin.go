//go:build darwin

package native

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/secretpaths"
)

// sandboxExec is the absolute path of Apple's sandbox-exec, which applies a
// Seatbelt profile (sandbox_init) to the process it starts. An absolute path
// so that a planted binary earlier in PATH cannot replace it.
const sandboxExec = "/usr/bin/sandbox-exec"

// Tier is the native macOS tier: each command runs under a generated
// Seatbelt profile.
type Tier struct {
	opts sandbox.Options
	log  *slog.Logger
	// hidden are the protected paths the profile denies, with symlinks'
	// targets as the tier was built; each run adds their targets as they
	// are then (Seatbelt matches resolved paths).
	hidden []string
}

// New returns the native macOS tier.
func New(opts sandbox.Options) (sandbox.Tier, error) {
	opts = opts.WithDefaults()
	if opts.User != "" {
		return nil, fmt.Errorf("native: ECTO_SANDBOX_USER=%q: switching user is supported on Linux only", opts.User)
	}
	return &Tier{opts: opts, log: opts.Logger, hidden: sandbox.HiddenPaths(opts.Hidden)}, nil
}

// Name implements sandbox.Tier.
func (t *Tier) Name() sandbox.TierName { return sandbox.TierNativeDarwin }

// Available implements sandbox.Tier.
func (t *Tier) Available(context.Context) error {
	if _, err := os.Stat(sandboxExec); err != nil {
		return &sandbox.UnavailableError{Tier: sandbox.TierNativeDarwin, Reason: sandboxExec + " is missing",
			Fix: "restore it from the macOS installation, or set ECTO_DOCKER_IMAGE to use the container tier", Err: err}
	}
	return nil
}

// SelfTest implements sandbox.Tier with the checks of what the Seatbelt
// profile promises (seatbeltSelfTest): the generic sandbox.SelfTest
// demands a read-only workspace, which this tier does not give.
func (t *Tier) SelfTest(ctx context.Context) error { return seatbeltSelfTest(ctx, t) }

// Run implements sandbox.Tier.
func (t *Tier) Run(ctx context.Context, req sandbox.Request) sandbox.Result {
	attempt, err := sandbox.Begin(sandbox.TierNativeDarwin, req)
	abort := attempt.Abort
	if err != nil {
		return abort("%v", err)
	}
	if reason := proxyUnsupported(req); reason != "" {
		return abort("%s", reason)
	}
	if reason := overlayUnsupported(req); reason != "" {
		return abort("%s", reason)
	}
	if err := t.Available(ctx); err != nil {
		return abort("%v", err)
	}
	// Seatbelt matches resolved paths (/tmp is /private/tmp).
	ws, err := sandbox.ResolveWorkspace(req.Workspace)
	if err != nil {
		return abort("%v", err)
	}
	hidden := sandbox.HiddenPaths(t.hidden, req.Hidden)
	// Security: a workspace of / or a system directory grants it whole;
	// one inside a protected path would be denied wholesale anyway.
	if err := secretpaths.CheckWorkspace(ws, secretpaths.List{Paths: hidden}); err != nil {
		return abort("%v", err)
	}
	scratch, err := os.MkdirTemp("", "ironvise-scratch-")
	if err != nil {
		return abort("create scratch directory: %v", err)
	}
	defer os.RemoveAll(scratch)
	if scratch, err = filepath.EvalSymlinks(scratch); err != nil {
		return abort("scratch directory: %v", err)
	}
	profile, sum, err := SeatbeltProfile(ws, scratch, hidden)
	if err != nil {
		return abort("generate the Seatbelt profile: %v", err)
	}

	timeout := t.opts.EffectiveTimeout(req)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, sandboxExec, "-p", profile, "/bin/sh", "-c", req.Command)
	cmd.Dir = ws
	cmd.Env = sandbox.CommandEnv(req.Env, map[string]string{
		"PATH": sandbox.DefaultPath + ":/opt/homebrew/bin", "HOME": scratch, "TMPDIR": scratch, "PWD": ws, "SHELL": "/bin/sh",
	})
	var stdout, stderr sandbox.Collector
	// The command leads a process group of its own, killed as soon as the
	// shell exits or the timeout strikes, so that its background processes
	// do not outlive it and write the workspace between steps.
	cmd.WaitDelay = 2 * time.Second
	runErr := runInGroup(cmd, &stdout, &stderr, 2*time.Second)
	dur := attempt.Elapsed()
	if cmd.ProcessState == nil {
		return abort("start %s: %v", sandboxExec, runErr)
	}
	res := sandbox.Ran(sandbox.TierNativeDarwin, dur, &stdout, &stderr)
	res.ExitCode, res.Signal = sandbox.ProcessOutcome(cmd.ProcessState)
	// sandbox-exec reports its own failure (the profile could not be
	// applied) on stderr with its name as prefix, before exec'ing the
	// shell: fail closed.
	if res.ExitCode != nil && *res.ExitCode != 0 && strings.HasPrefix(res.Stderr, "sandbox-exec:") {
		return abort("the Seatbelt profile could not be applied: %s", strings.TrimSpace(res.Stderr))
	}
	uid := os.Getuid()
	res.Enforced = &sandbox.Enforced{SeatbeltProfileSHA256: sum, Network: "none", ScratchDir: scratch, UID: &uid}
	if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		res.TimedOut(timeout, dur, "the command's process group was killed")
	}
	return res
}

var _ sandbox.Tier = (*Tier)(nil)
