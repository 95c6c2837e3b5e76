// Package timerslack gives `ironvise serve` and the sandbox launchers it
// starts a coarse timer slack, and gives every command they run the slack
// it would have had without it.
//
// A thread's timer slack is how much later than asked the kernel may end
// its timed sleeps (prctl PR_SET_TIMERSLACK; 50 µs by default). The Go
// runtime's monitor thread sleeps 20 µs at a time for about the first
// millisecond after it finds work, so a process that wakes for every
// command pays dozens of timers, context switches and wake-ups per
// command; on a virtual machine, where each costs several microseconds of
// CPU, that was 14.5 % of serve's CPU and 8.8 % of a launcher's in one
// profile (docs/operate/performance-log.md#exec-2026-12-04-night). With
// 1 ms of slack the kernel lets those sleeps run on and the thread wakes
// far less often: 3 ms less CPU per command
// (docs/operate/performance-log.md#exec-2026-12-04-slack). A command's
// path waits on no timer (serve reads sockets and pipes, and the group
// commit waits for the commits before it, not for a clock); the timers
// serve does set, a command's timeout and the checkpoint's delay, may
// end up to 1 ms later, which neither minds.
//
// The monitor thread is started before main, with the slack the process
// was started with, and a thread's slack can be set only by itself; so
// serve raises it by running itself again (Reexec), the only way to give
// every one of its threads the coarse slack. A thread's slack is inherited
// by the processes it starts and kept across execve: the launchers get
// serve's, and each gives its command the slack serve was started with,
// which serve names in [Var]; so do the container and microVM tiers
// (Start). A process that was not run again has no [Var] and changes
// nothing.
//
// [Var] is a hand-over between IronVise processes, not configuration:
// internal/config does not read it.
package timerslack

import (
	"fmt"
	"os"
	"strconv"
)

// Coarse is the slack Reexec gives a serving process: 1 ms.
const Coarse = 1_000_000

// Var is the environment variable in which a process run again by Reexec
// finds the slack it was started with (in nanoseconds): the slack its
// commands get.
const Var = "IRONVISE_TIMER_SLACK_NS"

// ForCommands returns the slack the commands of this process get: [Var]'s
// value when the process was run again by Reexec (set is true), and
// nothing to change otherwise. A value that is not a positive number of
// nanoseconds is an error: the variable was not set by Reexec.
func ForCommands() (ns uint64, set bool, err error) {
	v, ok := os.LookupEnv(Var)
	if !ok {
		return 0, false, nil
	}
	ns, err = Parse(v)
	if err != nil {
		return 0, false, fmt.Errorf("%s=%q: %w (fix: unset %s; IronVise sets it for the processes it runs again)", Var, v, err, Var)
	}
	return ns, true, nil
}

// Parse reads a slack in nanoseconds: a positive decimal number (0 would
// mean "the thread's default" to the kernel, not a slack).
func Parse(v string) (uint64, error) {
	ns, err := strconv.ParseUint(v, 10, 64)
	if err != nil || ns == 0 {
		return 0, fmt.Errorf("not a positive number of nanoseconds")
	}
	return ns, nil
}
