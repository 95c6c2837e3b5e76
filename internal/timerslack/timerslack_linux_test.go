//go:build linux

package timerslack

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// helperEnv makes the test binary run helperMain instead of its tests.
const helperEnv = "TIMERSLACK_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "reexec" {
		helperMain()
		return
	}
	os.Exit(m.Run())
}

// helperMain calls Reexec, then prints what this run has: the leader
// thread's slack, a new thread's, and Var.
func helperMain() {
	if err := Reexec(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	runtime.LockOSThread()
	own, err := Get()
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fresh := make(chan uint64)
	go func() {
		// A goroutine locked to a thread the runtime starts now.
		runtime.LockOSThread()
		ns, _ := Get()
		fresh <- ns
	}()
	v, ok := os.LookupEnv(Var)
	if !ok {
		v = "unset"
	}
	fmt.Printf("own=%d fresh=%d var=%s pid=%d\n", own, <-fresh, v, os.Getpid())
	os.Exit(0)
}

// startWithSlack starts cmd from a thread whose slack is ns, as a process
// started with that slack (by systemd's TimerSlackNSec, say) would be.
func startWithSlack(t *testing.T, cmd *exec.Cmd, ns uint64) {
	t.Helper()
	if err := withSlack(ns, cmd.Start); err != nil {
		t.Fatal(err)
	}
}

func runHelper(t *testing.T, slack uint64, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=reexec"}, env...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	startWithSlack(t, cmd, slack)
	pid := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v: %s", err, out.String())
	}
	got := strings.TrimSpace(out.String())
	// The run that printed is the process started: Reexec replaced it
	// rather than starting another.
	if !strings.HasSuffix(got, " pid="+strconv.Itoa(pid)) {
		t.Fatalf("helper printed %q, want it to end with pid=%d", got, pid)
	}
	return strings.TrimSuffix(got, " pid="+strconv.Itoa(pid))
}

func TestReexec(t *testing.T) {
	for _, c := range []struct {
		name  string
		slack uint64
		env   []string
		want  string
	}{
		// Run again: every thread coarse, the slack it had in Var.
		{"fine slack", 60_000, nil, fmt.Sprintf("own=%d fresh=%d var=60000", Coarse, Coarse)},
		// Nothing to do: as coarse already, or this is the new run.
		{"coarse already", 2 * Coarse, nil, fmt.Sprintf("own=%d fresh=%d var=unset", 2*Coarse, 2*Coarse)},
		{"new run", 60_000, []string{Var + "=55000"}, "own=60000 fresh=60000 var=55000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := runHelper(t, c.slack, c.env...); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// slackOf starts cat /proc/self/timerslack_ns with Start and returns what
// it printed.
func slackOf(t *testing.T) (string, error) {
	t.Helper()
	cmd := exec.Command("cat", "/proc/self/timerslack_ns")
	var out strings.Builder
	cmd.Stdout = &out
	if err := Start(cmd.Start); err != nil {
		return "", err
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.String()), nil
}

func TestStartGivesTheCommandsSlack(t *testing.T) {
	// A serving process's thread: coarse.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := Get()
	if err != nil {
		t.Fatal(err)
	}
	if err := Set(Coarse); err != nil {
		t.Fatal(err)
	}
	defer Set(own)

	t.Setenv(Var, "70001")
	got, err := slackOf(t)
	if err != nil || got != "70001" {
		t.Fatalf("with %s=70001 the process started has slack %q (%v), want 70001", Var, got, err)
	}
	if ns, _ := Get(); ns != Coarse {
		t.Fatalf("the calling thread's slack is %d after Start, want %d back", ns, Coarse)
	}

	os.Unsetenv(Var)
	if got, err := slackOf(t); err != nil || got != strconv.Itoa(Coarse) {
		t.Fatalf("without %s the process started has slack %q (%v), want the thread's own %d", Var, got, err, Coarse)
	}

	for _, bad := range []string{"0", "abc", "-5", ""} {
		t.Setenv(Var, bad)
		if _, err := slackOf(t); err == nil || !strings.Contains(err.Error(), "fix: unset "+Var) {
			t.Errorf("%s=%q: Start gave %v, want a refusal that says how to fix it", Var, bad, err)
		}
	}
}

func TestSetRefusesZero(t *testing.T) {
	if err := Set(0); err == nil {
		t.Fatal("Set(0) succeeded; the kernel would have read it as the thread's default")
	}
}
