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

// PrepareExecve converts path, argv and env for Exec.
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

// Exec replaces the process image. It returns only on failure.
func (x *Execve) Exec() error {
	_, _, e := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(x.path)),
		uintptr(unsafe.Pointer(&x.argv[0])), uintptr(unsafe.Pointer(&x.envp[0])))
	return e
}

// SetRlimit sets the soft and hard limit of resource for the process. It
// allocates nothing: the launcher sets the address-space cap with it, and
// the Go runtime cannot map more memory under that cap (an allocation that
// needs a new mapping aborts the launch). unix.Prlimit would move the
// limit to the heap; syscall.RawSyscall6 keeps it on the stack.
func SetRlimit(resource int, cur, max uint64) error {
	r := unix.Rlimit{Cur: cur, Max: max}
	_, _, e := syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, uintptr(resource), uintptr(unsafe.Pointer(&r)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
