//go:build linux

package launch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
)

// landlockProbe is a directory no rule grants (the tier refuses / as a
// workspace), so reading it must now fail with EACCES.
const landlockProbe = "/"

// verify reads back, from the kernel's own reports, what the launch put in
// force, and fails the launch when any of it is missing.
//
// Security: each step above checks its call's return value, but a return
// value is the kernel's word about one request. A kernel, a container
// runtime's seccomp shim or an LSM stack can accept a call and enforce
// less, and a bug here could skip a call. /proc/self/status is what the
// kernel applies to this thread at execve: a filter in mode 2, the
// no_new_privs bit, and empty capability sets; a read of a directory no
// rule grants is Landlock's answer itself; /proc/net/dev lists the
// interfaces of the network namespace the command will use.
func (l *launcher) verify() error {
	fail := func(format string, args ...any) error {
		return stepErr(StepVerify, fmt.Errorf(format, args...), "the kernel did not enforce what it accepted; report this with the output of `ironvise sandbox doctor`")
	}
	var status []byte
	err := l.call(StepVerify, func() error {
		var err error
		status, err = l.readFile("/proc/self/status")
		return err
	})
	if err != nil {
		return fail("read /proc/self/status: %w", err)
	}
	want := []struct{ key, value, name string }{
		{"Seccomp", "2", VerifiedSeccomp},
		{"NoNewPrivs", "1", VerifiedNoNewPrivs},
	}
	for _, w := range want {
		if got, ok := statusField(status, w.key); !ok || got != w.value {
			return fail("/proc/self/status has %s: %q, want %q", w.key, got, w.value)
		}
		l.applied.Verified = append(l.applied.Verified, w.name)
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if k == "CapBnd" && l.keepBounding {
			continue
		}
		v, ok := statusField(status, k)
		if !ok || strings.Trim(v, "0") != "" {
			return fail("/proc/self/status has %s: %q, want an empty set", k, v)
		}
	}
	l.applied.Verified = append(l.applied.Verified, VerifiedCaps)

	if err := kernel.OpenDir(landlockProbe); !errors.Is(err, syscall.EACCES) {
		return fail("reading %s, which no Landlock rule grants, gave %v instead of EACCES", landlockProbe, err)
	}
	l.applied.Verified = append(l.applied.Verified, VerifiedLandlock)

	if l.spec.Overlay != nil {
		if err := l.verifyOverlay(); err != nil {
			return fail("overlay mode: %w", err)
		}
		l.applied.Verified = append(l.applied.Verified, VerifiedOverlay)
	}

	if l.spec.Container {
		// The container's network namespace is the command's: what
		// keeps the command off it is the seccomp profile, which
		// refuses socket(2) of every family.
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err == nil {
			_ = unix.Close(fd)
			return fail("socket(AF_INET, SOCK_STREAM) succeeded under the seccomp profile")
		}
		l.applied.Verified = append(l.applied.Verified, VerifiedNetwork)
		return nil
	}
	dev, err := l.readFile("/proc/self/net/dev")
	if err != nil {
		return fail("read /proc/self/net/dev: %w", err)
	}
	if ifs := interfaces(string(dev)); len(ifs) != 1 || ifs[0] != "lo" {
		return fail("the command's network namespace has interfaces %v, want only lo", ifs)
	}
	if l.spec.Proxy {
		// Proxy mode allows TCP sockets: check that the namespace has no
		// route (the main table is empty; loopback's routes live in the
		// local table), and that the profile still refuses what carries
		// data without the proxy: UDP (a DNS query) and Unix sockets.
		route, err := os.ReadFile("/proc/self/net/route")
		if err != nil {
			return fail("read /proc/self/net/route: %w", err)
		}
		if lines := strings.Split(strings.TrimSpace(string(route)), "\n"); len(lines) > 1 {
			return fail("the command's network namespace has %d routes, want none (first: %q)", len(lines)-1, lines[1])
		}
		for _, sock := range []struct {
			family, typ int
			name        string
		}{{unix.AF_INET, unix.SOCK_DGRAM, "AF_INET, SOCK_DGRAM"}, {unix.AF_INET6, unix.SOCK_DGRAM, "AF_INET6, SOCK_DGRAM"},
			{unix.AF_UNIX, unix.SOCK_STREAM, "AF_UNIX, SOCK_STREAM"}, {unix.AF_INET, unix.SOCK_RAW, "AF_INET, SOCK_RAW"}} {
			fd, err := unix.Socket(sock.family, sock.typ, 0)
			if err == nil {
				_ = unix.Close(fd)
				return fail("socket(%s) succeeded under the proxy-mode seccomp profile", sock.name)
			}
		}
	}
	l.applied.Verified = append(l.applied.Verified, VerifiedNetwork)
	return nil
}

// statusField is the value of key in /proc/<pid>/status ("Key:\tvalue"
// lines), trimmed; ok is false when no line has that key.
func statusField(status []byte, key string) (value string, ok bool) {
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		if k, v, found := bytes.Cut(line, []byte(":")); found && string(k) == key {
			return string(bytes.TrimSpace(v)), true
		}
	}
	return "", false
}

// readFile is os.ReadFile, into l.buf when the launcher has one and the
// file fits: the bytes are valid until the next read. The files it reads
// are a few KiB of /proc.
func (l *launcher) readFile(p string) ([]byte, error) {
	if l.buf == nil {
		return os.ReadFile(p)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	n := 0
	for n < len(l.buf) {
		m, err := unix.Read(fd, l.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: p, Err: err}
		}
		if m == 0 {
			return l.buf[:n], nil
		}
		n += m
	}
	return os.ReadFile(p) // longer than the buffer
}

// interfaces lists the interface names of /proc/net/dev (two header lines,
// then "name: counters…").
func interfaces(s string) []string {
	var out []string
	for i, line := range strings.Split(s, "\n") {
		if i < 2 {
			continue
		}
		if name, _, ok := strings.Cut(line, ":"); ok {
			out = append(out, strings.TrimSpace(name))
		}
	}
	return out
}
