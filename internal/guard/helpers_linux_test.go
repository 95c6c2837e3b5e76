package guard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// nobodyID is the unprivileged uid and gid the tests run workers and
// attackers as.
const nobodyID = 65534

// asNobody makes a process run as nobody, without supplementary groups,
// keeping one capability: CAP_IPC_LOCK, so that a worker may lock its
// memory whatever RLIMIT_MEMLOCK's hard limit (root here may not raise
// it). Workers and the ptrace attacker get the same capability set, so the
// kernel's rule that a tracer must hold every capability of its tracee
// plays no part: only the dumpable flag decides.
func asNobody(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobodyID, Gid: nobodyID, Groups: []uint32{}}
	cmd.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_IPC_LOCK}
}

// execMain is the worker wrapper: its arguments are settings, "--", then
// the command to exec in place of this process (same pid, descriptors and
// environment):
//
//	memlock=N      soft and hard RLIMIT_MEMLOCK of N bytes ("unlimited")
//	core=unlimited soft RLIMIT_CORE raised to the hard limit
//	dir=D          working directory D
//	nobody         then become uid and gid 65534, no groups (last, so
//	               the limits can be raised first)
func execMain(args []string) int {
	i := 0
	for ; i < len(args) && args[i] != "--"; i++ {
		k, v, _ := strings.Cut(args[i], "=")
		var err error
		switch k {
		case "memlock":
			n, perr := uint64(unix.RLIM_INFINITY), error(nil)
			if v != "unlimited" {
				n, perr = strconv.ParseUint(v, 10, 64)
			}
			if perr != nil {
				err = perr
				break
			}
			err = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: n, Max: n})
		case "nobody":
			if err = syscall.Setgroups(nil); err == nil {
				if err = syscall.Setresgid(nobodyID, nobodyID, nobodyID); err == nil {
					err = syscall.Setresuid(nobodyID, nobodyID, nobodyID)
				}
			}
		case "core":
			var lim unix.Rlimit
			if err = unix.Getrlimit(unix.RLIMIT_CORE, &lim); err == nil {
				lim.Cur = lim.Max
				err = unix.Setrlimit(unix.RLIMIT_CORE, &lim)
			}
		case "dir":
			err = os.Chdir(v)
		default:
			err = errors.New("unknown setting")
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "guard-exec: %s: %v\n", args[i], err)
			return 2
		}
	}
	if i+1 >= len(args) {
		fmt.Fprintln(os.Stderr, "guard-exec: no command after --")
		return 2
	}
	err := syscall.Exec(args[i+1], args[i+1:], os.Environ())
	fmt.Fprintf(os.Stderr, "guard-exec: exec %s: %v\n", args[i+1], err)
	return 2
}

// sleepMain is an ordinary process, neither hardened nor confined, that
// waits for its stdin to end: the core dump test's control.
func sleepMain() int {
	// Running main: the exec is done (with the limits and directory
	// execMain set) and the runtime's signal handlers are installed.
	_, _ = os.Stdout.WriteString(sleepReady)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// sleepReady is what sleepMain prints once it runs.
const sleepReady = "sleeping\n"

// ptraceMain tries PTRACE_SEIZE on the pid it is given and prints "ok" or
// the errno's name. Exiting detaches.
func ptraceMain(args []string) int {
	if len(args) != 1 {
		return 2
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil {
		return 2
	}
	err = unix.PtraceSeize(pid)
	var errno syscall.Errno
	switch {
	case err == nil:
		fmt.Println("ok")
	case errors.As(err, &errno):
		fmt.Println(unix.ErrnoName(errno))
	default:
		fmt.Println(err)
	}
	return 0
}
