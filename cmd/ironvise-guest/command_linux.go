package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/envallow"
	"github.com/ironvise/ironvise/internal/sandbox/guestproto"
)

// drainGrace is how long the output readers may take after the command's
// processes are gone.
const drainGrace = 2 * time.Second

// commandPath is PATH for the command.
const commandPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// keeper keeps the first KeepBytes written to it and counts the rest, so a
// chatty command never blocks on a full pipe.
type keeper struct {
	buf   []byte
	total int64
}

func (k *keeper) Write(p []byte) (int, error) {
	k.total += int64(len(p))
	if room := guestproto.KeepBytes - len(k.buf); room > 0 {
		k.buf = append(k.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// runCommand runs /bin/sh -c command through the launcher and waits for it
// or for the timeout.
func runCommand(cfg config, command string, spec *guestproto.Run, timeout time.Duration) guestproto.Result {
	start := time.Now()
	fail := func(err error) guestproto.Result {
		r := failed(guestproto.StatusError, err)
		r.DurationMS = time.Since(start).Milliseconds()
		return r
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return fail(fmt.Errorf("guest: open %s: %w", os.DevNull, err))
	}
	defer devnull.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		return fail(fmt.Errorf("guest: pipe: %w", err))
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fail(fmt.Errorf("guest: pipe: %w", err))
	}
	// The launcher is this binary. /proc/self/exe reaches it even where its
	// path is covered or not searchable by the command's user.
	self := "/proc/self/exe"
	if _, err := os.Stat(self); err != nil {
		if self, err = os.Executable(); err != nil {
			return fail(fmt.Errorf("guest: find the launcher: %w", err))
		}
	}
	uid := os.Geteuid()
	attr := &syscall.SysProcAttr{
		// A session and process group of its own: the timeout kills the
		// whole group, and the command has no controlling terminal.
		Setsid: true,
		// If the guest dies, so does the command.
		Pdeathsig: syscall.SIGKILL,
	}
	if uid == 0 {
		// Security: never root. The command cannot read /dev/vdb (the
		// run's nonce) nor write the console, so it cannot forge the
		// guest's result frame; a root-owned read-only rootfs stays so.
		attr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}
		uid = nobody
	}
	argv := append([]string{self, launcherArg}, limitArgs(spec.Limits)...)
	argv = append(argv, "--", "/bin/sh", "-c", command)
	pid, err := syscall.ForkExec(self, argv, &syscall.ProcAttr{
		Dir:   cfg.workdir,
		Env:   commandEnv(cfg, spec.Env),
		Files: []uintptr{devnull.Fd(), outW.Fd(), errW.Fd()},
		Sys:   attr,
	})
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return fail(fmt.Errorf("guest: start the command: %w", err))
	}

	var stdout, stderr keeper
	var readers sync.WaitGroup
	for _, p := range []struct {
		r *os.File
		k *keeper
	}{{outR, &stdout}, {errR, &stderr}} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			_, _ = io.Copy(p.k, p.r)
		}()
	}

	waited := make(chan unix.WaitStatus, 1)
	go func() { waited <- waitFor(pid, cfg.pid1) }()
	var (
		ws       unix.WaitStatus
		timedOut bool
	)
	timer := time.NewTimer(timeout)
	select {
	case ws = <-waited:
		timer.Stop()
	case <-timer.C:
		timedOut = true
		killAll(pid, cfg.pid1)
		ws = <-waited
	}
	// Nothing the command started outlives it: as PID 1 everything else in
	// the VM, otherwise its process group.
	killAll(pid, cfg.pid1)
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainGrace):
		// A process outside the group (possible only when not PID 1)
		// holds a pipe open: stop reading.
		outR.Close()
		errR.Close()
		<-done
	}
	outR.Close()
	errR.Close()

	res := guestproto.Result{
		Status: guestproto.StatusOK, Stdout: stdout.buf, Stderr: stderr.buf,
		StdoutTotal: stdout.total, StderrTotal: stderr.total,
		DurationMS: time.Since(start).Milliseconds(), UID: &uid, NoNewPrivs: true,
	}
	switch {
	case timedOut:
		res.Status, res.Signal = guestproto.StatusTimeout, "SIGKILL"
		res.Reason = fmt.Sprintf("guest-side timeout of %d s exceeded; the command was killed", int(timeout.Seconds()))
	case ws.Signaled():
		res.Signal = unix.SignalName(ws.Signal())
		if res.Signal == "" {
			res.Signal = "SIG" + strconv.Itoa(int(ws.Signal()))
		}
	case ws.ExitStatus() == launcherFailed:
		// The launcher could not set up the command; it said why on
		// stderr. The command never ran.
		return guestproto.Result{Status: guestproto.StatusError, Reason: "guest: " + firstLine(stderr.buf), DurationMS: res.DurationMS}
	default:
		code := ws.ExitStatus()
		res.ExitCode = &code
	}
	return res
}

// waitFor waits for pid. As PID 1 it reaps every other exiting process on
// the way (orphans are reparented to init and would stay zombies).
func waitFor(pid int, pid1 bool) unix.WaitStatus {
	var ws unix.WaitStatus
	target := pid
	if pid1 {
		target = -1
	}
	for {
		got, err := unix.Wait4(target, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || got == pid {
			return ws
		}
	}
}

// killAll kills the command's process group, and as PID 1 every process in
// the VM but init.
func killAll(pid int, pid1 bool) {
	_ = unix.Kill(-pid, unix.SIGKILL)
	if pid1 {
		_ = unix.Kill(-1, unix.SIGKILL)
	}
}

// commandEnv is the command's environment: of what the host sent, only
// the sandbox allowlist (envallow: LANG, LC_*, TZ, TERM, …); PATH, HOME,
// TMPDIR, PWD and SHELL are always the guest's, LANG defaults to C.UTF-8.
func commandEnv(cfg config, hostEnv []string) []string {
	env := []string{"PATH=" + commandPath, "HOME=" + cfg.scratch, "TMPDIR=" + cfg.scratch, "PWD=" + cfg.workdir, "SHELL=/bin/sh"}
	hasLang := false
	seen := map[string]bool{}
	for _, kv := range hostEnv {
		name, _, ok := cutEnv(kv)
		// Security: an allowlist, the host's own (sandbox.EnvAllowed):
		// whatever wrote the image, no API key, token, DATABASE_URL,
		// LD_PRELOAD or other variable outside it reaches the command.
		// The first of a repeated name wins, as on the host.
		if !ok || seen[name] || !envallow.Allowed(name) {
			continue
		}
		seen[name] = true
		hasLang = hasLang || name == "LANG"
		env = append(env, kv)
	}
	if !hasLang {
		env = append(env, "LANG=C.UTF-8")
	}
	return env
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], i > 0
		}
	}
	return "", "", false
}

// limitArgs passes the rlimits to the launcher.
func limitArgs(l guestproto.Limits) []string {
	var a []string
	add := func(name string, v int) {
		if v > 0 {
			a = append(a, name, strconv.Itoa(v))
		}
	}
	add("-cpu", l.CPUSecs)
	add("-nofile", l.NoFile)
	add("-nproc", l.NProc)
	add("-fsize-mib", l.FSizeMiB)
	add("-as-mib", l.ASMiB)
	return a
}

// launcherFailed is the launcher's exit code when it could not set up the
// command (the shell's own codes stop at 128+64).
const launcherFailed = 253

// launcherMain runs in the child, already as the command's user: it sets
// the rlimits and no_new_privs, then replaces itself with the shell.
func launcherMain(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "launcher: "+format+"\n", a...)
		return launcherFailed
	}
	limits := map[string]int{}
	i := 0
	for ; i < len(args) && args[i] != "--"; i += 2 {
		if i+1 >= len(args) {
			return fail("flag %s needs a value", args[i])
		}
		v, err := strconv.Atoi(args[i+1])
		if err != nil || v <= 0 {
			return fail("flag %s: bad value %q", args[i], args[i+1])
		}
		limits[args[i]] = v
	}
	if i+1 >= len(args) {
		return fail("no command")
	}
	argv := args[i+1:]
	// The address-space cap goes last: the Go runtime of this launcher
	// must not run under it for long.
	order := []struct {
		flag     string
		resource int
		scale    uint64
	}{
		{"-cpu", unix.RLIMIT_CPU, 1},
		{"-nofile", unix.RLIMIT_NOFILE, 1},
		{"-nproc", unix.RLIMIT_NPROC, 1},
		{"-fsize-mib", unix.RLIMIT_FSIZE, 1 << 20},
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fail("setrlimit core: %v", err)
	}
	for _, o := range order {
		if v, ok := limits[o.flag]; ok {
			lim := uint64(v) * o.scale
			if err := unix.Setrlimit(o.resource, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
				return fail("setrlimit %s: %v", o.flag, err)
			}
		}
	}
	// no_new_privs is per thread and survives execve only on the thread
	// that calls it: set it and exec on one locked thread. It stops the
	// command from gaining privileges through setuid or file capabilities.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail("no_new_privs: %v", err)
	}
	if v, ok := limits["-as-mib"]; ok {
		lim := uint64(v) << 20
		if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
			return fail("setrlimit as: %v", err)
		}
	}
	err := unix.Exec(argv[0], argv, os.Environ())
	return fail("exec %s: %v", argv[0], err)
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	if len(b) == 0 {
		return "the launcher failed"
	}
	return string(b)
}
