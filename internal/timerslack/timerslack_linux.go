//go:build linux

package timerslack

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Get returns the calling thread's timer slack in nanoseconds.
func Get() (uint64, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return 0, err
	}
	return uint64(v), nil
}

// Set sets the calling thread's timer slack to ns nanoseconds; 0 is
// refused (EINVAL), as the kernel would read it as the thread's default.
func Set(ns uint64) error {
	if ns == 0 {
		return syscall.EINVAL
	}
	return unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0)
}

// Reexec runs this process's executable again in its place, with the same
// arguments, the environment plus [Var] (the slack it had), and [Coarse]
// as the slack of every thread of the new run. It returns only when it did
// not: nil when there is nothing to do ([Var] is set — this is the new run
// — or the slack is already as coarse), an error when a step failed, in
// which case the process is as it was and may go on (it costs only CPU).
// Call it before the process has done anything it would do twice.
func Reexec() error {
	if _, ok := os.LookupEnv(Var); ok {
		return nil
	}
	// The slack is the calling thread's, and execve keeps the calling
	// thread's as the new run's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := Get()
	if err != nil {
		return fmt.Errorf("read the timer slack: %w", err)
	}
	if own >= Coarse {
		return nil
	}
	env := append(os.Environ(), Var+"="+strconv.FormatUint(own, 10))
	err = withSlack(Coarse, func() error { return syscall.Exec("/proc/self/exe", os.Args, env) })
	return fmt.Errorf("run %s again: %w", os.Args[0], err)
}

// Start calls start (an exec.Cmd's Start) on a thread that has the slack
// of this process's commands (ForCommands), when it has one, so that the
// process started takes it: for the container and microVM tiers, whose
// runtime runs the command and would otherwise inherit the coarse slack.
func Start(start func() error) error {
	ns, set, err := ForCommands()
	if err != nil {
		return err
	}
	if !set {
		return start()
	}
	// A new process takes the slack of the thread that forks it.
	return withSlack(ns, start)
}

// withSlack calls f on this goroutine's thread with its slack set to ns,
// then gives the thread its own slack back. Should that fail, the
// goroutine keeps the thread, and the runtime ends the thread when the
// goroutine ends: no other goroutine runs on it with ns.
func withSlack(ns uint64, f func() error) error {
	runtime.LockOSThread()
	own, err := Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("read the timer slack: %w", err)
	}
	if err := Set(ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("set the timer slack to %d ns: %w", ns, err)
	}
	err = f()
	if rerr := Set(own); rerr != nil {
		return errors.Join(err, fmt.Errorf("restore the timer slack: %w", rerr))
	}
	runtime.UnlockOSThread()
	return err
}
