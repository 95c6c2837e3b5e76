//go:build linux

package launch

import (
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
		status, err = os.ReadFile("/proc/self/status")
		return err
	})
	if err != nil {
		return fail("read /proc/self/status: %w", err)
	}
	fields := statusFields(string(status))
	want := []struct{ key, value, name string }{
		{"Seccomp", "2", VerifiedSeccomp},
		{"NoNewPrivs", "1", VerifiedNoNewPrivs},
	}
	for _, w := range want {
		if got, ok := fields[w.key]; !ok || got != w.value {
			return fail("/proc/self/status has %s: %q, want %q", w.key, got, w.value)
		}
		l.applied.Verified = append(l.applied.Verified, w.name)
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if k == "CapBnd" && l.keepBounding {
			continue
		}
		v, ok := fields[k]
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
	dev, err := os.ReadFile("/proc/self/net/dev")
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

// statusFields parses /proc/<pid>/status ("Key:\tvalue" lines).
func statusFields(s string) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
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
