//go:build linux

// Command sysprobe is a fixture of the container tier's real-Podman tests
// (internal/sandbox/container/podman_linux_test.go): built static
// (CGO_ENABLED=0) into a test workspace, it runs inside the container and
// attempts the system calls a shell cannot make, so the tests see what the
// seccomp profile lets through. Arguments name the probes; each prints one
// line, "<probe> OK" when the kernel let the call through or
// "<probe> ERR <ERRNO>" when it was refused. It is never shipped.
//
//	sysprobe unshare-user clone-newuser ioctl-tiocsti
//
// The arguments it passes are chosen so that the kernel itself answers with
// another errno than the profile's (EFAULT for a NULL pointer, EBADF for
// fd -1): EPERM then means the filter refused the call.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
)

// uffdUserModeOnly is UFFD_USER_MODE_ONLY (linux/userfaultfd.h): with it an
// unprivileged process may create a userfaultfd whatever
// vm.unprivileged_userfaultfd says.
const uffdUserModeOnly = 1

// neg is a negative int as a register value.
func neg(n int) uintptr { return uintptr(n) }

// calls are the probes that are one system call: its name and arguments.
var calls = map[string]struct {
	name string
	args []uintptr
}{
	"unshare-user":    {"unshare", []uintptr{unix.CLONE_NEWUSER}},
	"unshare-mount":   {"unshare", []uintptr{unix.CLONE_NEWNS}},
	"unshare-net":     {"unshare", []uintptr{unix.CLONE_NEWNET}},
	"clone3":          {"clone3", []uintptr{0, 0}},
	"setns":           {"setns", []uintptr{neg(-1), 0}},
	"mount":           {"mount", []uintptr{0, 0, 0, 0, 0}},
	"keyctl":          {"keyctl", []uintptr{unix.KEYCTL_GET_KEYRING_ID, neg(unix.KEY_SPEC_SESSION_KEYRING), 0}},
	"add_key":         {"add_key", []uintptr{0, 0, 0, 0, 0}},
	"bpf":             {"bpf", []uintptr{unix.BPF_PROG_LOAD, 0, 0}},
	"userfaultfd":     {"userfaultfd", []uintptr{uffdUserModeOnly}},
	"io_uring_setup":  {"io_uring_setup", []uintptr{1, 0}},
	"perf_event_open": {"perf_event_open", []uintptr{0, 0, neg(-1), neg(-1), 0}},
	"ptrace":          {"ptrace", []uintptr{unix.PTRACE_PEEKDATA, 1, 0, 0}},
	"personality":     {"personality", []uintptr{0xffffffff}},
	"socket-unix":     {"socket", []uintptr{unix.AF_UNIX, unix.SOCK_STREAM, 0}},
	"socket-inet":     {"socket", []uintptr{unix.AF_INET, unix.SOCK_STREAM, 0}},
	// Proxy mode allows TCP client sockets and connect, nothing else of
	// the network (seccomp.OCIProxyProfile); fd -1 makes the kernel answer
	// EBADF where the filter lets a call through.
	"socket-inet6":             {"socket", []uintptr{unix.AF_INET6, unix.SOCK_STREAM, 0}},
	"socket-inet-tcp-nonblock": {"socket", []uintptr{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, unix.IPPROTO_TCP}},
	"socket-inet-signext":      {"socket", []uintptr{0xffffffff_00000000 | unix.AF_INET, unix.SOCK_STREAM, 0}},
	"socket-inet-udp":          {"socket", []uintptr{unix.AF_INET, unix.SOCK_DGRAM, 0}},
	"socket-inet6-udp":         {"socket", []uintptr{unix.AF_INET6, unix.SOCK_DGRAM, 0}},
	"socket-inet-mptcp":        {"socket", []uintptr{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}},
	"socket-inet-sctp":         {"socket", []uintptr{unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP}},
	"socket-netlink":           {"socket", []uintptr{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}},
	"connect":                  {"connect", []uintptr{neg(-1), 0, 0}},
	"bind":                     {"bind", []uintptr{neg(-1), 0, 0}},
	"listen":                   {"listen", []uintptr{neg(-1), 0}},
	"accept4":                  {"accept4", []uintptr{neg(-1), 0, 0, 0}},
	"socketpair-dgram":         {"socketpair", []uintptr{unix.AF_UNIX, unix.SOCK_DGRAM, 0, 0}},
	"socketpair-stream":        {"socketpair", []uintptr{unix.AF_UNIX, unix.SOCK_STREAM, 0, 0}},
	// fd 0 is /dev/null: the kernel answers ENOTTY to any terminal request.
	"ioctl-tiocsti":         {"ioctl", []uintptr{0, unix.TIOCSTI, 0}},
	"ioctl-tiocsti-signext": {"ioctl", []uintptr{0, 0xffffffff_00000000 | unix.TIOCSTI, 0}},
	"ioctl-tiocsti-garbage": {"ioctl", []uintptr{0, 0x12345678_00000000 | unix.TIOCSTI, 0}},
	"ioctl-tioclinux":       {"ioctl", []uintptr{0, unix.TIOCLINUX, 0}},
	"ioctl-tcgets":          {"ioctl", []uintptr{0, unix.TCGETS, 0}},
	"ioctl-tcgets-signext":  {"ioctl", []uintptr{0, 0xffffffff_00000000 | unix.TCGETS, 0}},
	"prlimit-self":          {"prlimit64", []uintptr{0, unix.RLIMIT_NOFILE, 0, 0}},
	"prlimit-other":         {"prlimit64", []uintptr{1, unix.RLIMIT_NOFILE, 0, 0}},
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "exit0" {
		os.Exit(0) // the child of the clone probes
	}
	for _, p := range os.Args[1:] {
		fmt.Println(p, result(probe(p)))
	}
}

func probe(p string) error {
	switch p {
	// clone with namespace flags, the way Go's os/exec makes it.
	case "clone-newuser":
		return cloneChild(unix.CLONE_NEWUSER)
	case "clone-newuser-newnet-newns":
		return cloneChild(unix.CLONE_NEWUSER | unix.CLONE_NEWNET | unix.CLONE_NEWNS)
	case "fork":
		return cloneChild(0)
	}
	c, ok := calls[p]
	if !ok {
		return fmt.Errorf("unknown probe %q", p)
	}
	nr, ok := seccomp.SyscallNumber(c.name)
	if !ok {
		return fmt.Errorf("no number for %s", c.name)
	}
	return kernel.Attempt(uintptr(nr), c.args...)
}

func cloneChild(flags uintptr) error {
	cmd := exec.Command("/proc/self/exe", "exit0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
	return cmd.Run()
}

func result(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "OK"
	case errors.As(err, &errno):
		return "ERR " + unix.ErrnoName(errno)
	}
	return "ERR " + err.Error()
}
