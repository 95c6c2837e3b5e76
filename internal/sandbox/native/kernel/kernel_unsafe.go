//go:build linux

package kernel

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ClearCapabilities empties the calling thread's effective, permitted and
// inheritable capability sets (capset with a zeroed v3 payload).
func ClearCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return errno(unix.Capset(&hdr, &data[0]))
}

// Capabilities returns the calling thread's effective, permitted and
// inheritable sets as 64-bit masks.
func Capabilities() (eff, prm, inh uint64, err error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, 0, 0, errno(err)
	}
	join := func(lo, hi uint32) uint64 { return uint64(hi)<<32 | uint64(lo) }
	return join(data[0].Effective, data[1].Effective), join(data[0].Permitted, data[1].Permitted),
		join(data[0].Inheritable, data[1].Inheritable), nil
}

// SeccompInstall installs filter on every thread of the process
// (SECCOMP_FILTER_FLAG_TSYNC). The caller must have set no_new_privs. A
// positive return from the kernel names a thread that could not be
// synchronised; it is reported as ESRCH.
func SeccompInstall(filter []unix.SockFilter) error {
	if len(filter) == 0 {
		return syscall.EINVAL
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if e != 0 {
		return e
	}
	if r != 0 {
		return syscall.ESRCH
	}
	return nil
}

// Execve is a prepared execve(2): the argument vectors are converted to C
// strings up front, so that nothing allocates between the last resource
// limit and the exec.
type Execve struct {
	path *byte
	argv []*byte
	envp []*byte
}

// PrepareExecve converts path, argv and env for CapThenExec.
func PrepareExecve(path string, argv, env []string) (*Execve, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return nil, err
	}
	a, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return nil, err
	}
	e, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return nil, err
	}
	return &Execve{path: p, argv: a, envp: e}, nil
}

// SetRlimit sets the soft and hard limit of resource for the process. The
// address-space cap, under which the Go runtime cannot map memory, is set
// by CapThenExec instead.
func SetRlimit(resource int, cur, max uint64) error {
	r := unix.Rlimit{Cur: cur, Max: max}
	_, _, e := syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, uintptr(resource), uintptr(unsafe.Pointer(&r)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// What CapThenExec failed at.
const (
	FailedCap    = iota + 1 // setting the limit; nothing was executed
	FailedRecord            // writing the record; the shell was not executed
	FailedExec              // executing the shell
)

// CapThenExec sets the address-space limit (RLIMIT_AS) to cur and max,
// unless capped is false, and then executes: each of direct in turn while
// the kernel answers ENOENT, ENOTDIR or EACCES (a shell's search of PATH:
// a file absent, under a non-directory or not executable sends it on; any
// other failure, ENOEXEC for a script without #! say, goes to the shell),
// then, after writing record to fd when direct was not empty, shell. It
// returns only when it could not, with what failed (FailedCap,
// FailedRecord, FailedExec) and the error.
//
// Between the limit and execve there are system calls and nothing else.
// Under the limit the Go runtime cannot map memory, and neither can the
// race detector: a call of any instrumented function records events, and
// when its trace buffer fills it maps a new one, which killed the launcher
// of a -race test build one launch in a few. So this function is not
// instrumented (go:norace), calls only the raw system calls, which are not
// either, and allocates nothing.
//
//go:norace
func CapThenExec(capped bool, cur, max uint64, direct []*Execve, fd int, record []byte, shell *Execve) (failed int, err syscall.Errno) {
	if capped {
		r := unix.Rlimit{Cur: cur, Max: max}
		if _, _, e := syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_AS, uintptr(unsafe.Pointer(&r)), 0, 0, 0); e != 0 {
			return FailedCap, e
		}
	}
	if len(direct) > 0 {
		for i := 0; i < len(direct); i++ {
			x := direct[i]
			_, _, e := syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(x.path)),
				uintptr(unsafe.Pointer(&x.argv[0])), uintptr(unsafe.Pointer(&x.envp[0])))
			if e != unix.ENOENT && e != unix.ENOTDIR && e != unix.EACCES {
				break
			}
		}
		for off := 0; off < len(record); {
			n, _, e := syscall.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&record[off])), uintptr(len(record)-off))
			if e == unix.EINTR {
				continue
			}
			if e != 0 {
				return FailedRecord, e
			}
			off += int(n)
		}
	}
	_, _, e := syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(shell.path)),
		uintptr(unsafe.Pointer(&shell.argv[0])), uintptr(unsafe.Pointer(&shell.envp[0])))
	return FailedExec, e
}
