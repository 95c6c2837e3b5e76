//go:build unix

package native

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// seatbeltSelfTest is the macOS tier's self-test: it runs one probe command
// through t and checks what the Seatbelt profile promises
// (docs/reference/sandboxing.md, macOS), from the inside and from the
// host. The workspace is writable under that profile, so the generic
// sandbox.SelfTest, which demands a read-only one, cannot apply. It
// checks that:
//
//   - the command runs, reads a workspace file and is recorded as
//     enforced;
//   - a write outside the workspace and the scratch directory is refused,
//     and no file appears on the host;
//   - a file outside the read roots cannot be read;
//   - a TCP connection to a listener of IronVise's on 127.0.0.1 is
//     refused, and the listener sees none;
//   - IronVise's own process cannot be signalled;
//   - a background process is gone once Run has returned.
//
// Every failed check is reported, joined, wrapping sandbox.ErrSelfTest. It
// is built for every unix, not only macOS, so that its checks are run
// on Linux against a confining tier and an unconfining one.
func seatbeltSelfTest(ctx context.Context, t sandbox.Tier) error {
	if err := t.Available(ctx); err != nil {
		return err
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", sandbox.ErrSelfTest, t.Name(), fmt.Sprintf(format, args...))
	}
	base, err := os.MkdirTemp("", "ironvise-selftest-")
	if err != nil {
		return fail("create fixtures: %v", err)
	}
	defer os.RemoveAll(base)
	ws, outside, secret := filepath.Join(base, "workspace"), filepath.Join(base, "outside"), filepath.Join(base, "secret.txt")
	n, err := rand.Int(rand.Reader, big.NewInt(1e9))
	if err != nil {
		return fail("random marker: %v", err)
	}
	// A sleep duration only this run uses (about three days), so that the
	// background process can be found in the process table.
	marker := fmt.Sprintf("260000.%09d", n)
	secretTxt := "ironvise-selftest-secret-" + marker
	// Everyone may read and write the fixtures: a refusal can only come
	// from the sandbox, not from file permissions.
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{base, 0o755}, {ws, 0o755}, {outside, 0o777}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return fail("create fixtures: %v", err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			return fail("create fixtures: %v", err)
		}
	}
	if err := os.WriteFile(secret, []byte(secretTxt+"\n"), 0o644); err != nil {
		return fail("create fixtures: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ws, "selftest.txt"), []byte("ironvise-selftest\n"), 0o644); err != nil {
		return fail("create fixtures: %v", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp4", "127.0.0.1:0")
	if err != nil {
		return fail("listen on 127.0.0.1: %v", err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	outProbe := filepath.Join(outside, "probe")
	script := strings.Join([]string{
		`cat selftest.txt`,
		fmt.Sprintf(`if ( echo x > %s ) 2>/dev/null; then echo OUTSIDE-WRITTEN; fi`, shellQuote(outProbe)),
		fmt.Sprintf(`cat %s 2>/dev/null`, shellQuote(secret)),
		// nc ships with macOS; bash's /dev/tcp is the fallback.
		fmt.Sprintf(`if command -v nc >/dev/null 2>&1 && nc -z -w 2 127.0.0.1 %d >/dev/null 2>&1; then echo NET-CONNECTED; fi`, port),
		fmt.Sprintf(`if [ -x /bin/bash ] && /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d' >/dev/null 2>&1; then echo NET-CONNECTED; fi`, port),
		fmt.Sprintf(`if kill -0 %d 2>/dev/null; then echo SIGNALLED; fi`, os.Getpid()),
		fmt.Sprintf(`sleep %s >/dev/null 2>&1 </dev/null &`, marker),
		`echo SELFTEST-DONE`,
	}, "\n")
	r := t.Run(ctx, sandbox.Request{Command: script, Workspace: ws, Timeout: 20 * time.Second})
	if r.Status == sandbox.StatusAborted || r.Status == sandbox.StatusTimeout {
		return fail("%s", r.Headline())
	}
	var errs []error
	if r.Status != sandbox.StatusOK || r.Enforced == nil {
		errs = append(errs, fail("the command ran without enforcement (%s)", r.Headline()))
	}
	if !strings.Contains(r.Stdout, "ironvise-selftest\n") || !strings.Contains(r.Stdout, "SELFTEST-DONE") {
		errs = append(errs, fail("the probe command did not run through: %s", oneLine(r.Observation())))
	}
	if _, err := os.Lstat(outProbe); err == nil || strings.Contains(r.Stdout, "OUTSIDE-WRITTEN") {
		errs = append(errs, fail("a file could be written outside the workspace (%s)", outProbe))
	}
	if strings.Contains(r.Stdout+r.Stderr, secretTxt) {
		errs = append(errs, fail("a file outside the read roots could be read (%s)", secret))
	}
	// A connection that got through waits in the listener's backlog: it
	// is accepted at once; none is waited for longer.
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		errs = append(errs, fail("a TCP connection reached 127.0.0.1:%d", port))
	} else if strings.Contains(r.Stdout, "NET-CONNECTED") {
		errs = append(errs, fail("a TCP connection to 127.0.0.1:%d succeeded", port))
	}
	if strings.Contains(r.Stdout, "SIGNALLED") {
		errs = append(errs, fail("the command could signal IronVise (pid %d)", os.Getpid()))
	}
	if pids, err := seatbeltSurvivors(ctx, marker); err != nil {
		errs = append(errs, fail("look for background processes: %v", err))
	} else if len(pids) > 0 {
		errs = append(errs, fail("background processes outlived the command: pids %v (killed by the self-test)", pids))
	}
	if len(errs) > 0 {
		errs = append(errs, errors.New("fix: the Seatbelt profile does not hold on this Mac; use the container tier (ECTO_DOCKER_IMAGE) until it does"))
	}
	return errors.Join(errs...)
}

// seatbeltSurvivors returns the pids of live processes whose arguments contain
// marker, giving a killed process up to two seconds to go, and kills them.
func seatbeltSurvivors(ctx context.Context, marker string) ([]int, error) {
	var pids []int
	for end := time.Now().Add(2 * time.Second); ; {
		var err error
		if pids, err = sandbox.ProcessesMatching(ctx, marker); err != nil {
			return nil, err
		}
		if len(pids) == 0 || time.Now().After(end) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return pids, nil
}

// shellQuote quotes s for the POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// oneLine returns the first line of s, cut to 200 bytes.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
