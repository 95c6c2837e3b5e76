//go:build windows

package native

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// Tier is the native Windows tier: each command runs in a Job Object with
// KILL_ON_JOB_CLOSE, UI restrictions and CPU, memory and process limits. It
// restricts no files and filters no system calls (sandbox.md §5).
type Tier struct {
	opts sandbox.Options
	log  *slog.Logger
}

// New returns the native Windows tier.
func New(opts sandbox.Options) (sandbox.Tier, error) {
	opts = opts.WithDefaults()
	if opts.User != "" {
		return nil, fmt.Errorf("native: ECTO_SANDBOX_USER=%q: switching user is supported on Linux only", opts.User)
	}
	return &Tier{opts: opts, log: opts.Logger}, nil
}

// Name implements sandbox.Tier.
func (t *Tier) Name() sandbox.TierName { return sandbox.TierNativeWindows }

// Available implements sandbox.Tier: Job Objects exist on every supported
// Windows.
func (t *Tier) Available(context.Context) error { return nil }

// SelfTest implements sandbox.Tier: it checks that a command runs inside a
// job (the workspace is not read-only on Windows, so the generic self-test
// does not apply).
func (t *Tier) SelfTest(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "ironvise-selftest-")
	if err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrSelfTest, err)
	}
	defer os.RemoveAll(dir)
	r := t.Run(ctx, sandbox.Request{Command: "echo ok", Workspace: dir, Timeout: 10 * time.Second})
	if r.Status != sandbox.StatusOK || r.Enforced == nil || !strings.Contains(r.Stdout, "ok") {
		return fmt.Errorf("%w: %s: %s", sandbox.ErrSelfTest, t.Name(), r.Headline())
	}
	return nil
}

// windowsEnv are the variables Windows programs need to start at all.
var windowsEnv = []string{"SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "PATH", "SYSTEMDRIVE", "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE"}

// Run implements sandbox.Tier.
func (t *Tier) Run(ctx context.Context, req sandbox.Request) sandbox.Result {
	start := time.Now()
	abort := func(format string, args ...any) sandbox.Result {
		return sandbox.Aborted(sandbox.TierNativeWindows, fmt.Sprintf(format, args...), time.Since(start))
	}
	if err := sandbox.ValidateRequest(req); err != nil {
		return abort("%v", err)
	}
	scratch, err := os.MkdirTemp("", "ironvise-scratch-")
	if err != nil {
		return abort("create scratch directory: %v", err)
	}
	defer os.RemoveAll(scratch)
	lim := t.opts.Limits.Tighten(req.Limits)
	job, applied, err := newJob(jobLimits{cpuSecs: lim.CPUSecs, memMiB: lim.MemMiB, processes: lim.NProc})
	if err != nil {
		return abort("job object: %v", err)
	}
	// Closing the job kills whatever is left in it: no survivors.
	defer windows.CloseHandle(job)

	set := map[string]string{"TEMP": scratch, "TMP": scratch, "USERPROFILE": scratch, "HOME": scratch}
	for _, kv := range req.Env {
		name, val, ok := strings.Cut(kv, "=")
		for _, w := range windowsEnv {
			if ok && strings.EqualFold(name, w) {
				set[w] = val
			}
		}
	}
	timeout := t.opts.EffectiveTimeout(req)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, "cmd.exe", "/C", req.Command)
	cmd.Dir = req.Workspace
	cmd.Env = sandbox.CommandEnv(req.Env, set)
	var stdout, stderr sandbox.Collector
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Created suspended so that it is in the job before it runs a single
	// instruction (a process could otherwise spawn children outside it).
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP}
	cmd.Cancel = func() error { return windows.TerminateJobObject(job, 1) }
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return abort("start cmd.exe: %v", err)
	}
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err == nil {
		err = windows.AssignProcessToJobObject(job, ph)
		windows.CloseHandle(ph)
	}
	if err == nil {
		err = resumeProcess(uint32(cmd.Process.Pid))
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return abort("put the command in its job object: %v", err)
	}
	_ = cmd.Wait()
	dur := time.Since(start)
	res := sandbox.Result{Tier: sandbox.TierNativeWindows, Status: sandbox.StatusOK, Duration: dur}
	res.Stdout, res.StdoutTruncated = stdout.Capped()
	res.Stderr, res.StderrTruncated = stderr.Capped()
	res.ExitCode, res.Signal = sandbox.ProcessOutcome(cmd.ProcessState)
	res.Enforced = &sandbox.Enforced{JobObject: applied, Network: "host", ScratchDir: scratch,
		RLimits: &sandbox.RLimits{CPUSecs: lim.CPUSecs, ASMiB: lim.MemMiB, NProc: lim.NProc}}
	if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		res.Status, res.ExitCode = sandbox.StatusTimeout, nil
		res.Reason = fmt.Sprintf("wall-clock timeout of %d s exceeded; the job object was terminated", int(timeout.Seconds()))
		res.Duration = max(dur, timeout)
	}
	return res
}

var _ sandbox.Tier = (*Tier)(nil)
