//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// errno returns err's syscall.Errno, or err itself.
func errno(err error) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return err
}

// CloseRangeCloexec marks every descriptor from first upwards close-on-exec
// (close_range with CLOSE_RANGE_CLOEXEC, Linux 5.11+). Marking instead of
// closing keeps descriptors the Go runtime may hold valid until execve.
func CloseRangeCloexec(first uint) error {
	return errno(unix.CloseRange(first, ^uint(0), unix.CLOSE_RANGE_CLOEXEC))
}

// Setsid starts a new session and process group with the caller as leader.
func Setsid() error {
	_, err := unix.Setsid()
	return errno(err)
}

// SetNoNewPrivs sets PR_SET_NO_NEW_PRIVS on the calling thread (seccomp's
// TSYNC then extends it to every thread; Landlock needs it on the thread it
// restricts).
func SetNoNewPrivs() error {
	return errno(unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
}

// NoNewPrivs reports the calling thread's no_new_privs bit.
func NoNewPrivs() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	return v == 1, errno(err)
}

// LastCap returns the highest capability number the kernel knows.
func LastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("read cap_last_cap: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("parse cap_last_cap: %w", err)
	}
	return n, nil
}

// DropBoundingSet removes every capability up to last from the calling
// thread's bounding set (needs CAP_SETPCAP). The caller has locked its OS
// thread and execs from it.
func DropBoundingSet(last int) error {
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("PR_CAPBSET_DROP %d: %w", c, errno(err))
		}
	}
	return nil
}

// ClearAmbient empties the calling thread's ambient capability set.
func ClearAmbient() error {
	return errno(unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0))
}

// SetSecurebits sets the calling thread's securebits (needs CAP_SETPCAP).
func SetSecurebits(bits uintptr) error {
	return errno(unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0))
}

// SetParentDeathSignal asks the kernel to send sig when the parent exits.
func SetParentDeathSignal(sig syscall.Signal) error {
	return errno(unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(sig), 0, 0, 0))
}

// SetUser switches every thread to gid, the supplementary groups and uid
// (real, effective and saved). Go's syscall package applies these to all
// threads.
func SetUser(uid, gid int, groups []int) error {
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %w", errno(err))
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("setresgid %d: %w", gid, errno(err))
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("setresuid %d: %w", uid, errno(err))
	}
	return nil
}

// GetRlimit returns the soft and hard limit of resource.
func GetRlimit(resource int) (cur, max uint64, err error) {
	var r unix.Rlimit
	if err := unix.Prlimit(0, resource, nil, &r); err != nil {
		return 0, 0, errno(err)
	}
	return r.Cur, r.Max, nil
}

// LandlockABI returns the Landlock ABI version of the running kernel;
// ENOSYS or EOPNOTSUPP mean Landlock is not built in or not enabled.
func LandlockABI() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	return v, errno(err)
}

// LandlockErrata returns the kernel's Landlock errata bitmask.
func LandlockErrata() (int, error) {
	v, err := ll.LandlockGetErrata()
	return v, errno(err)
}

// Mount is mount(2).
func Mount(source, target, fstype string, flags uintptr, data string) error {
	return errno(unix.Mount(source, target, fstype, flags, data))
}

// MountSetattr changes the attributes of the mount at path (and of every
// mount below it when recursive), Linux 5.12+.
func MountSetattr(path string, recursive bool, set, clr uint64) error {
	flags := uint(0)
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	return errno(unix.MountSetattr(unix.AT_FDCWD, path, flags, &unix.MountAttr{Attr_set: set, Attr_clr: clr}))
}

// Chdir is chdir(2).
func Chdir(path string) error { return errno(unix.Chdir(path)) }

// KernelRelease returns uname -r.
func KernelRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", errno(err)
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}

// Write writes all of b to fd, retrying on EINTR.
func Write(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return errno(err)
		}
		b = b[n:]
	}
	return nil
}

// Exit ends the process immediately with code, without running deferred
// functions or flushing anything (the launcher has nothing to flush).
func Exit(code int) { unix.Exit(code) }

// Attempt makes system call nr with up to six integer arguments (never
// pointers) and returns the kernel's errno, or nil. It exists for the
// confinement tests, which must make calls IronVise itself never makes
// (execveat, bpf, perf_event_open, io_uring_setup) and see them refused.
func Attempt(nr uintptr, args ...uintptr) error {
	var a [6]uintptr
	if len(args) > len(a) {
		return syscall.EINVAL
	}
	copy(a[:], args)
	_, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	if e != 0 {
		return e
	}
	return nil
}

// LoopbackUp sets the IFF_UP flag of the loopback interface of the calling
// thread's network namespace (needs CAP_NET_ADMIN over it). A new network
// namespace starts with lo down.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", errno(err))
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("ifreq lo: %w", errno(err))
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS lo: %w", errno(err))
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS lo: %w", errno(err))
	}
	return nil
}

// OpenDir opens path as a directory for reading and closes it again,
// returning the kernel's errno: the launcher's proof that Landlock now
// refuses what it should.
func OpenDir(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return errno(err)
	}
	return errno(unix.Close(fd))
}
