//go:build linux

package pidone

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwarded are the signals the init passes on to its child: what a
// container runtime sends to stop, reload or resize the container's first
// process. SIGKILL and SIGSTOP cannot be caught and need no forwarding
// (SIGKILL of pid 1 ends the whole namespace).
var forwarded = []os.Signal{
	syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH,
}

// Run makes the process the init of its PID namespace when it is pid 1:
// it starts the same executable with the same arguments and environment
// as its child, reaps every process re-parented to it, and returns the
// child's exit status (128 plus the signal number when a signal ended it)
// with ran true. In any other process it returns at once with ran false.
// Failures are written to stderr and end with code 1: IronVise does not go
// on as a pid 1 that leaves zombies behind.
func Run(stderr io.Writer) (code int, ran bool) {
	if os.Getpid() != 1 {
		return 0, false
	}
	// Registered before the child starts, so that neither its exit nor an
	// early signal is missed.
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, forwarded...)...)

	attr := &syscall.SysProcAttr{Setpgid: true}
	if _, err := unix.IoctlGetTermios(0, unix.TCGETS); err == nil {
		// On a terminal the child's group takes the foreground, so that
		// the terminal's own signals (Ctrl-C) reach it once, not a second
		// time through the init.
		attr.Foreground, attr.Ctty = true, 0
	}
	// The executable's path, so that the child's name (ps, top) is
	// ironvise rather than exe.
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	start := func() (int, error) {
		return syscall.ForkExec(exe, os.Args, &syscall.ProcAttr{
			Env:   os.Environ(),
			Files: []uintptr{0, 1, 2},
			Sys:   attr,
		})
	}
	pid, err := start()
	if err != nil && attr.Foreground {
		// A terminal on stdin that is not the namespace's controlling
		// terminal: the child runs in its own group in the background.
		attr.Foreground = false
		pid, err = start()
	}
	if err != nil {
		fmt.Fprintf(stderr, "ironvise: as the container's first process (pid 1), IronVise starts itself as a child and reaps orphaned processes; starting that child failed: %v\n"+
			"  fix: make IronVise's executable readable in the container, or give the container another init (podman/docker run --init)\n", err)
		return 1, true
	}
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			// A child that has already exited is reaped below.
			_ = syscall.Kill(pid, sig.(syscall.Signal))
			continue
		}
		if status, done := reap(pid); done {
			signal.Stop(sigs)
			return exitCode(status), true
		}
	}
	return 1, true // not reached: sigs is never closed
}

// reap waits for every child that has exited, without blocking; done is
// true once child is among them, with its status.
func reap(child int) (status unix.WaitStatus, done bool) {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || got <= 0 {
			// ECHILD: nothing left to wait for; 0: the others still run.
			return status, done
		}
		if got == child {
			status, done = ws, true
		}
	}
}

// exitCode is the status a shell would report for ws.
func exitCode(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 1
}
