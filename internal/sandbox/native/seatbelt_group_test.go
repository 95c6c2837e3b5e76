//go:build unix

package native

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sleepMarker returns a sleep duration unique to this run, of about three
// days, that sleep(1) accepts on Linux and macOS: it marks the probe's
// background process in the process table.
func sleepMarker(t *testing.T) string {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(1e9))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("250000.%09d", n)
}

// liveWithin reports whether pid is a live process (a zombie, killed and waiting
// for its parent, counts as gone); it waits up to d for it to go.
func liveWithin(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		gone := syscall.Kill(pid, 0) == syscall.ESRCH
		if !gone {
			out, _ := exec.Command("/bin/ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
			gone = strings.HasPrefix(strings.TrimSpace(string(out)), "Z") || len(bytes.TrimSpace(out)) == 0
		}
		if gone {
			return false
		}
		if time.Now().After(end) {
			return true
		}
	}
}

// bgPID runs script (which must print the pid of a background sleep as its
// last line) through run and returns that pid; the sleep is killed when
// the test ends whatever happened.
func bgPID(t *testing.T, run func(*exec.Cmd, *bytes.Buffer) error, script string) (int, time.Duration) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.CommandContext(context.Background(), "/bin/sh", "-c", script)
	start := time.Now()
	if err := run(cmd, &out); err != nil {
		t.Fatalf("run %q: %v", script, err)
	}
	took := time.Since(start)
	lines := strings.Fields(out.String())
	if len(lines) == 0 {
		t.Fatalf("%q printed nothing", script)
	}
	pid, err := strconv.Atoi(lines[len(lines)-1])
	if err != nil || pid <= 1 {
		t.Fatalf("%q printed %q; want a pid last", script, out.String())
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid, took
}

func inGroup(cmd *exec.Cmd, out *bytes.Buffer) error {
	return runInGroup(cmd, out, &bytes.Buffer{}, 2*time.Second)
}

// TestRunInGroupKillsBackground: a plain background process of the command
// is gone when runInGroup returns, also when it still holds the output
// pipe, and Run does not wait for it.
func TestRunInGroupKillsBackground(t *testing.T) {
	m := sleepMarker(t)
	cases := []struct{ name, script string }{
		{"redirected", "sleep " + m + " >/dev/null 2>&1 </dev/null & echo $!"},
		// Holds stdout: exec.Cmd.Wait would wait for it (WaitDelay).
		{"holding the output pipe", "sleep " + m + " & echo $!"},
		{"grandchild", "sh -c 'sleep " + m + " & echo $!'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pid, took := bgPID(t, inGroup, tc.script)
			if liveWithin(pid, 2*time.Second) {
				t.Fatalf("background process %d outlived the command", pid)
			}
			if took > 1500*time.Millisecond {
				t.Errorf("runInGroup took %v; want it to return when the shell exits", took)
			}
		})
	}
}

// TestPlainWaitLeavesBackground is the control of the test above: with a
// plain exec.Cmd, as the macOS tier ran before, the background process
// survives, so the assertion above can fail.
func TestPlainWaitLeavesBackground(t *testing.T) {
	pid, _ := bgPID(t, func(cmd *exec.Cmd, out *bytes.Buffer) error {
		cmd.Stdout = out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd.Run()
	}, "sleep "+sleepMarker(t)+" >/dev/null 2>&1 </dev/null & echo $!")
	if !liveWithin(pid, 200*time.Millisecond) {
		t.Fatalf("background process %d died without a group kill; the survivor test proves nothing", pid)
	}
}

// TestRunInGroupTimeout: cancellation kills the shell and its background
// processes at once.
func TestRunInGroupTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	m := sleepMarker(t)
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", "sleep "+m+" & echo $!; sleep "+m)
	start := time.Now()
	err := runInGroup(cmd, &out, &bytes.Buffer{}, 2*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || cmd.ProcessState == nil {
		t.Fatalf("runInGroup = %v; want the killed shell's exit error", err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("shell ended with %v; want SIGKILL", cmd.ProcessState)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("runInGroup returned after %v; want about 300 ms", took)
	}
	pid, perr := strconv.Atoi(strings.TrimSpace(out.String()))
	if perr != nil {
		t.Fatalf("stdout %q: want the background pid", out.String())
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if liveWithin(pid, 2*time.Second) {
		t.Fatalf("background process %d outlived the timeout", pid)
	}
}

// TestRunInGroupSetsidEscapes pins the documented limit: a process that
// starts a session of its own leaves the group and survives; the drain
// deadline keeps it from holding runInGroup when it keeps the output pipe
// open.
func TestRunInGroupSetsidEscapes(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("no setsid(1) here (util-linux)")
	}
	// The pid is written once setsid(2) has returned, so the shell cannot
	// exit (and the group be killed) while the escapee is still a member.
	f := t.TempDir() + "/pid"
	pid, took := bgPID(t, func(cmd *exec.Cmd, out *bytes.Buffer) error {
		return runInGroup(cmd, out, &bytes.Buffer{}, 500*time.Millisecond)
	}, setsid+` sh -c 'echo $$ > `+f+`; exec sleep `+sleepMarker(t)+`' & while [ ! -s `+f+` ]; do sleep 0.01; done; cat `+f)
	if took > 2*time.Second {
		t.Errorf("runInGroup took %v with a 500 ms drain", took)
	}
	if !liveWithin(pid, 200*time.Millisecond) {
		t.Errorf("setsid'd process %d was killed; update the macOS limits in docs/reference/sandboxing.md", pid)
	}
}

// TestRunInGroupOutput: both streams arrive whole, and the exit status is
// the command's.
func TestRunInGroupOutput(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(context.Background(), "/bin/sh", "-c", `head -c 300000 /dev/zero | tr '\0' a; echo; echo "e r r" >&2; exit 3`)
	err := runInGroup(cmd, &out, &errOut, 2*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("runInGroup = %v; want exit status 3", err)
	}
	if out.Len() != 300001 || errOut.String() != "e r r\n" {
		t.Errorf("got %d bytes of stdout and stderr %q; want 300001 and %q", out.Len(), errOut.String(), "e r r\n")
	}
}

// TestRunInGroupStartError: a command that cannot start reports why and
// leaves nothing behind.
func TestRunInGroupStartError(t *testing.T) {
	cmd := exec.CommandContext(context.Background(), "/nonexistent/ironvise-no-such-shell")
	err := runInGroup(cmd, &bytes.Buffer{}, &bytes.Buffer{}, time.Second)
	if err == nil || cmd.ProcessState != nil {
		t.Fatalf("runInGroup = %v; want a start error", err)
	}
}
