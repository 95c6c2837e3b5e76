//go:build linux

package pidone

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// roleEnv selects what the test binary does when a test starts it again:
// "orphans" or "signal". The same variable reaches the child the init
// starts, which is the same binary with the same environment.
const roleEnv = "PIDONE_TEST_ROLE"

// TestMain runs a helper role: as pid 1 of a new PID namespace the helper
// calls Run, which starts the helper again as its child; that child (not
// pid 1) plays the role.
func TestMain(m *testing.M) {
	role := os.Getenv(roleEnv)
	if role == "" {
		os.Exit(m.Run())
	}
	if code, ran := Run(os.Stderr); ran {
		os.Exit(code)
	}
	switch role {
	case "orphans":
		os.Exit(orphans())
	case "signal":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		fmt.Println("ready")
		select {
		case <-ch:
			fmt.Println("got SIGTERM")
			os.Exit(0)
		case <-time.After(20 * time.Second):
			fmt.Println("no signal")
			os.Exit(3)
		}
	case "killed":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	os.Exit(2)
}

// orphans leaves processes to the namespace's pid 1: each shell exits at
// once, and its background sleep, re-parented to pid 1, exits a moment
// later. It then counts the zombies pid 1 has not reaped and exits 7.
func orphans() int {
	for range 5 {
		if out, err := exec.Command("sh", "-c", "sleep 0.1 & exit 0").CombinedOutput(); err != nil {
			fmt.Printf("starting an orphan: %v %s\n", err, out)
			return 2
		}
	}
	// The sleeps end after 0.1 s; pid 1 has had ample time to reap them
	// after one more second.
	time.Sleep(1100 * time.Millisecond)
	// /proc is the test host's: pid 1 of the namespace is this process's
	// parent there (or this process, without an init).
	self, err := os.Readlink("/proc/self")
	if err != nil {
		fmt.Println(err)
		return 2
	}
	_, init, ok := stat(self)
	if !ok {
		fmt.Println("no stat for", self)
		return 2
	}
	if os.Getpid() == 1 {
		init = self
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		fmt.Println(err)
		return 2
	}
	zombies := 0
	for _, e := range entries {
		if state, ppid, ok := stat(e.Name()); ok && state == "Z" && ppid == init {
			zombies++
		}
	}
	fmt.Printf("zombies %d\n", zombies)
	return 7
}

// stat reads the state and the parent of pid from /proc/<pid>/stat.
func stat(pid string) (state, ppid string, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return "", "", false
	}
	return f[0], f[1], true
}

// inPIDNamespace starts the test binary in a role as pid 1 of a new PID
// namespace.
func inPIDNamespace(t *testing.T, role string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a new PID namespace needs root here; the CI runs these tests as root")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func TestReapsOrphansAndKeepsTheExitCode(t *testing.T) {
	cmd := inPIDNamespace(t, "orphans")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("want the child's exit code 7 from pid 1, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "zombies 0\n") {
		t.Errorf("orphans re-parented to pid 1 were left as zombies:\n%s", out)
	}
}

func TestForwardsSignals(t *testing.T) {
	cmd := inPIDNamespace(t, "signal")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the child did not start: %q", lines.Text())
	}
	// The runtime's stop signal goes to pid 1 of the container.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest := ""
	for lines.Scan() {
		rest += lines.Text() + "\n"
	}
	if err := cmd.Wait(); err != nil || rest != "got SIGTERM\n" {
		t.Fatalf("SIGTERM to pid 1 did not reach its child: %v, output %q", err, rest)
	}
}

func TestChildKilledBySignal(t *testing.T) {
	err := inPIDNamespace(t, "killed").Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Fatalf("a child killed by SIGKILL: want exit %d from pid 1, got %v", 128+int(syscall.SIGKILL), err)
	}
}

func TestNotPIDOne(t *testing.T) {
	if code, ran := Run(os.Stderr); ran || code != 0 {
		t.Fatalf("Run in a process that is not pid 1 = %d, %v; want 0, false", code, ran)
	}
}
