//go:build windows

package native

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// Tier is the native Windows tier: each command runs in a Job Object with
// KILL_ON_JOB_CLOSE, UI restrictions and CPU, memory and process limits. It
// restricts no files and filters no system calls
// (docs/design/sandbox.md#windows-tier).
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

// selfTestCommand is the self-test's probe: cmd.exe looked up through Path
// and PATHEXT (an external program, not a builtin), given an argument in
// double quotes that must come back with its quotes.
const (
	selfTestCommand = `cmd /D /C echo "ironvise self-test"`
	selfTestWant    = `"ironvise self-test"`
)

// SelfTest implements sandbox.Tier: it runs an external program inside a
// job, with an argument in double quotes, and checks that the job was
// applied and the output came back intact. (The workspace is not read-only
// on Windows, so the generic self-test does not apply; and a builtin such
// as echo alone would pass with no Path at all.)
func (t *Tier) SelfTest(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "ironvise-selftest-")
	if err != nil {
		return fmt.Errorf("%w: %s: create workspace: %w", sandbox.ErrSelfTest, t.Name(), err)
	}
	defer os.RemoveAll(dir)
	r := t.Run(ctx, sandbox.Request{Command: selfTestCommand, Workspace: dir, Timeout: 20 * time.Second})
	switch {
	case r.Status != sandbox.StatusOK:
		return fmt.Errorf("%w: %s: %s", sandbox.ErrSelfTest, t.Name(), r.Headline())
	case r.Enforced == nil || !slices.Contains(r.Enforced.JobObject, "kill_on_job_close"):
		return fmt.Errorf("%w: %s: no job object recorded for the command", sandbox.ErrSelfTest, t.Name())
	case r.ExitCode == nil || *r.ExitCode != 0 || strings.TrimSpace(r.Stdout) != selfTestWant:
		return fmt.Errorf("%w: %s: %s printed %q (stderr %q), want %s: programs on Path or quoted arguments do not reach the command intact; fix: check the system Path and ComSpec (System Properties, Environment Variables), or use the container tier (ECTO_DOCKER_IMAGE)",
			sandbox.ErrSelfTest, t.Name(), selfTestCommand, strings.TrimSpace(r.Stdout), strings.TrimSpace(r.Stderr), selfTestWant)
	}
	return nil
}

// systemEnvNames are the variables a command takes from the machine's
// system environment: what cmd.exe needs to find programs (Path, PATHEXT,
// ComSpec), what Windows programs need to start at all (SystemRoot,
// windir) and where software is installed. Nothing of the user's or of
// IronVise's own environment passes: a token kept in a user variable must
// never reach a command.
var systemEnvNames = []string{
	"SystemRoot", "windir", "SystemDrive", "ComSpec", "Path", "PATHEXT", "OS",
	"NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE", "PROCESSOR_IDENTIFIER", "PROCESSOR_LEVEL", "PROCESSOR_REVISION",
	"ProgramData", "ALLUSERSPROFILE", "ProgramFiles", "ProgramFiles(x86)", "ProgramW6432",
	"CommonProgramFiles", "CommonProgramFiles(x86)", "CommonProgramW6432", "PSModulePath",
}

// defaultPathExt is PATHEXT when the system environment lacks it: the
// extensions cmd.exe tries by itself.
const defaultPathExt = ".COM;.EXE;.BAT;.CMD"

// systemEnv returns the variables the tier sets for every command, and the
// absolute path of cmd.exe. The values are the machine's system
// environment as a new logon gets it (CreateEnvironmentBlock without a
// user token: the registry's system variables, expanded), never the
// request's: callers pass only sandbox.EnvAllowed's names, and an agent
// must not choose where programs are looked up. SystemRoot, windir,
// SystemDrive, ComSpec, Path and PATHEXT fall back to values derived from
// the Windows directory when the registry lacks them.
func systemEnv() (env map[string]string, comspec string, err error) {
	winDir, err := windows.GetSystemWindowsDirectory()
	if err != nil {
		return nil, "", fmt.Errorf("GetSystemWindowsDirectory: %w", err)
	}
	sysDir, err := windows.GetSystemDirectory()
	if err != nil {
		return nil, "", fmt.Errorf("GetSystemDirectory: %w", err)
	}
	block, err := windows.Token(0).Environ(false)
	if err != nil {
		return nil, "", fmt.Errorf("CreateEnvironmentBlock: %w", err)
	}
	env = map[string]string{}
	for _, kv := range block {
		// Names are case-insensitive on Windows; each is set once, with
		// the spelling of systemEnvNames.
		name, val, _ := strings.Cut(kv, "=")
		for _, want := range systemEnvNames {
			if val != "" && strings.EqualFold(name, want) {
				env[want] = val
			}
		}
	}
	// Security: cmd.exe is started by its absolute path in the system
	// directory, so that a cmd.exe planted in the workspace or in a
	// directory of IronVise's own PATH is never the shell.
	comspec = filepath.Join(sysDir, "cmd.exe")
	fallback := map[string]string{
		"SystemRoot": winDir, "windir": winDir, "SystemDrive": filepath.VolumeName(winDir), "ComSpec": comspec,
		"Path":    strings.Join([]string{sysDir, winDir, filepath.Join(sysDir, "Wbem"), filepath.Join(sysDir, "WindowsPowerShell", "v1.0")}, ";"),
		"PATHEXT": defaultPathExt,
	}
	for k, v := range fallback {
		if env[k] == "" {
			env[k] = v
		}
	}
	return env, comspec, nil
}

// cmdLine is the command line that hands command to cmd.exe verbatim. With
// /S, cmd.exe removes the first double quote after /C and the last one on
// the line, and runs exactly what is between; os/exec's quoting of an
// argument (quotes escaped with backslashes, for programs that parse argv
// as the C runtime does) would reach cmd.exe with literal backslashes and
// mangle every command containing a double quote. /D skips the AutoRun
// commands of the registry, which a command could otherwise set (the tier
// protects no registry key) to run code ahead of every later command.
func cmdLine(comspec, command string) string {
	return syscall.EscapeArg(comspec) + ` /D /S /C "` + command + `"`
}

// Run implements sandbox.Tier.
func (t *Tier) Run(ctx context.Context, req sandbox.Request) sandbox.Result {
	attempt, err := sandbox.Begin(sandbox.TierNativeWindows, req)
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
	scratch, err := os.MkdirTemp("", "ironvise-scratch-")
	if err != nil {
		return abort("create scratch directory: %v", err)
	}
	defer func() {
		if err := os.RemoveAll(scratch); err != nil {
			t.log.Warn("sandbox: remove scratch directory", "dir", scratch, "err", err)
		}
	}()
	lim := t.opts.Limits.Tighten(req.Limits)
	job, applied, err := newJob(jobLimits{cpuSecs: lim.CPUSecs, memMiB: lim.MemMiB, processes: lim.NProc})
	if err != nil {
		return abort("job object: %v", err)
	}
	// Closing the job kills whatever is left in it: no survivors.
	defer windows.CloseHandle(job)

	set, comspec, err := systemEnv()
	if err != nil {
		return abort("the system environment for commands: %v; fix: check that the Windows directory and the registry's system environment are readable", err)
	}
	// The per-user locations are the scratch directory, as HOME is on
	// Linux, so that tools keep their caches and temporary files there.
	for _, k := range []string{"TEMP", "TMP", "USERPROFILE", "HOME", "APPDATA", "LOCALAPPDATA"} {
		set[k] = scratch
	}
	timeout := t.opts.EffectiveTimeout(req)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, comspec)
	cmd.Dir = req.Workspace
	cmd.Env = sandbox.CommandEnv(req.Env, set)
	var stdout, stderr sandbox.Collector
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Created suspended so that it is in the job before it runs a single
	// instruction (a process could otherwise spawn children outside it).
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CmdLine:       cmdLine(comspec, req.Command),
		CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP,
	}
	cmd.Cancel = func() error { return windows.TerminateJobObject(job, 1) }
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return abort("start %s: %v", comspec, err)
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
	dur := attempt.Elapsed()
	res := sandbox.Ran(sandbox.TierNativeWindows, dur, &stdout, &stderr)
	res.ExitCode, res.Signal = sandbox.ProcessOutcome(cmd.ProcessState)
	res.Enforced = &sandbox.Enforced{JobObject: applied, Network: "host", ScratchDir: scratch,
		RLimits: &sandbox.RLimits{CPUSecs: lim.CPUSecs, ASMiB: lim.MemMiB, NProc: lim.NProc}}
	if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		res.Status, res.ExitCode = sandbox.StatusTimeout, nil
		res.Reason = fmt.Sprintf("wall-clock timeout of %d s exceeded; the job object was terminated", int(timeout.Seconds()))
		res.Duration, res.Limit = max(dur, timeout), timeout
	}
	return res
}

var _ sandbox.Tier = (*Tier)(nil)
