package native

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
)

// readSyscall is read(2)'s number in /proc/PID/task/TID/syscall.
func readSyscall(t *testing.T) string {
	switch runtime.GOARCH {
	case "amd64":
		return "0"
	case "arm64":
		return "63"
	}
	t.Skipf("no read(2) number known for %s", runtime.GOARCH)
	return ""
}

// awaitHeld waits until a thread of p's launcher blocks reading the
// specification pipe (read(2) on launch.SpecFD) with the pipe empty: the
// launcher took its specification, confined itself and waits for its
// start. The same read waits for the specification itself, and a launcher
// that was asleep in it when the specification came still shows it until
// it runs; the specification is then still in the pipe, which tells the
// two apart. It fails the test when the process ends or execs something
// else first, or after 10 s.
func awaitHeld(t *testing.T, p *prepared) {
	t.Helper()
	pid := p.l.cmd.Process.Pid
	nr := readSyscall(t)
	self, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	want := nr + " 0x" + strconv.FormatInt(launch.SpecFD, 16) + " "
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err != nil || exe != self {
			t.Fatalf("the prepared launcher %d is now %q (%v): the command ran before its start", pid, exe, err)
		}
		// Unread bytes first, then the blocked read: a read seen after
		// the pipe was found empty came after the specification was read.
		if unread(t, p.l.spec) == 0 {
			tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/syscall")
			for _, f := range tasks {
				if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), want) {
					return
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the prepared launcher %d never waited on its specification pipe", pid)
}

// unread is how many bytes wait in the pipe whose end f is (FIONREAD
// answers for either end of a pipe; TIOCINQ is its number).
func unread(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		t.Fatal(err)
	}
	if ierr != nil {
		t.Fatalf("FIONREAD on the specification pipe: %v", ierr)
	}
	return n
}

func prepare(t *testing.T, tier *Tier, fx *fixture, cmd string) *prepared {
	t.Helper()
	p, ok := tier.Prepare(context.Background(), sandbox.Request{Command: cmd, Workspace: fx.ws, Timeout: 60 * time.Second}).(*prepared)
	if !ok || p.result != nil {
		t.Fatalf("prepare failed: %+v", p.result)
	}
	return p
}

// held prepares `echo started` on a fresh tier and waits until its
// launcher holds.
func held(t *testing.T) *prepared {
	t.Helper()
	tier := newTestTier(t, sandbox.Options{})
	p := prepare(t, tier, newFixture(t), "echo started")
	awaitHeld(t, p)
	return p
}

// TestPreparedCommandWaitsForStart: a prepared command's launcher applies
// the whole sandbox and then holds: the process is still the launcher, and
// stays so, until Start, which runs the command confined as Run does.
func TestPreparedCommandWaitsForStart(t *testing.T) {
	p := held(t)
	// What holds is already confined: no_new_privs and the seccomp
	// filter are on before the start (the overlap with the commit).
	status, err := os.ReadFile("/proc/" + strconv.Itoa(p.l.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nNoNewPrivs:\t1\n", "\nSeccomp:\t2\n", "\nCapEff:\t0000000000000000\n"} {
		if !strings.Contains(string(status), want) {
			t.Fatalf("the held launcher's status lacks %q:\n%s", want, status)
		}
	}
	// Held well past the time a launch takes: still nothing ran.
	time.Sleep(100 * time.Millisecond)
	awaitHeld(t, p)
	r := p.Start()
	exitZero(t, r)
	contains(t, r, "started")
	if r.Enforced == nil || r.Enforced.LandlockABI == nil || r.Enforced.SeccompProfileSHA256 == "" {
		t.Fatalf("no enforcement recorded: %+v", r.Enforced)
	}
	// A second start is refused; it runs nothing.
	if again := p.Start(); again.Status != sandbox.StatusAborted {
		t.Fatalf("a second Start: %s; want aborted", again.Status)
	}
}

// TestDiscardedCommandNeverRuns: a prepared command that is discarded (its
// intent's commit failed) never runs: the launcher is killed while it
// holds, nothing reaches the command's output, and its scratch mount
// point is left empty.
func TestDiscardedCommandNeverRuns(t *testing.T) {
	p := held(t)
	p.Discard()
	if out, _ := p.l.stdout.Capped(); out != "" {
		t.Fatalf("a discarded command wrote %q", out)
	}
	if empty, err := emptyDir(p.scratch.dir); err != nil || !empty {
		t.Fatalf("the scratch mount point %s after a discard: empty %v, %v", p.scratch.dir, empty, err)
	}
	if r := p.Start(); r.Status != sandbox.StatusAborted {
		t.Fatalf("Start after Discard: %s; want aborted", r.Status)
	}
}

// TestWithdrawnCommandEndsAtStart: a launcher whose parent closes the
// specification pipe without the start byte (the parent died or withdrew
// the command) reports a setup failure at the start step and exits
// without running the command.
func TestWithdrawnCommandEndsAtStart(t *testing.T) {
	p := held(t)
	defer p.Discard()
	p.l.spec.Close()
	_, _, setupErr := readStatus(p.l.status)
	<-p.l.exited
	if setupErr == nil || setupErr.Step != launch.StepStart || !strings.Contains(setupErr.Message, "nothing of it ran") {
		t.Fatalf("status: %+v; want a setup error at %q", setupErr, launch.StepStart)
	}
	if code := p.l.cmd.ProcessState.ExitCode(); code != launch.ExitFailed {
		t.Fatalf("launcher exit %d; want %d", code, launch.ExitFailed)
	}
	if out, _ := p.l.stdout.Capped(); out != "" {
		t.Fatalf("a withdrawn command wrote %q", out)
	}
}

// TestAwaitHeldWaitsForTheSpecificationToBeRead: a launcher that still
// sleeps in the read its specification came on looks held to a check of
// the blocked read alone. Stopped there (SIGSTOP) while the specification
// arrives, it must not count as held until it ran, read it and confined
// itself.
func TestAwaitHeldWaitsForTheSpecificationToBeRead(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{})
	pid := waitReady(t, tier).cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(300 * time.Millisecond)
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}()
	defer func() { <-resumed }()
	p := prepare(t, tier, newFixture(t), "echo started")
	if p.l.cmd.Process.Pid != pid {
		t.Fatalf("the command went to launcher %d, not the ready one %d", p.l.cmd.Process.Pid, pid)
	}
	awaitHeld(t, p)
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "\nNoNewPrivs:\t1\n") {
		t.Fatalf("counted as held before it confined itself:\n%s", status)
	}
	exitZero(t, p.Start())
}
