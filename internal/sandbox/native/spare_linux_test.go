//go:build linux

package native

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
)

// waitReady waits until the tier has a ready launcher and returns it.
func waitReady(t testing.TB, tier *Tier) *launcher {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		tier.spares.mu.Lock()
		l := tier.spares.ready
		tier.spares.mu.Unlock()
		if l != nil {
			return l
		}
		time.Sleep(200 * time.Microsecond)
	}
	t.Fatal("no launcher became ready")
	return nil
}

// pidNS is the PID namespace of host process pid, as the command inside
// it sees its own: "pid:[inode]".
func pidNS(t testing.TB, pid int) string {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// runNS runs a command printing its PID namespace and checks that it ran
// confined.
func runNS(t *testing.T, tier *Tier, fx *fixture) string {
	t.Helper()
	r := run(t, tier, fx, "readlink /proc/self/ns/pid")
	if r.ExitCode == nil || *r.ExitCode != 0 || r.Enforced.NoNewPrivs == nil || !*r.Enforced.NoNewPrivs {
		t.Fatalf("run: %s", r.Observation())
	}
	return strings.TrimSpace(r.Stdout)
}

// launchers are the processes whose parent is this test process and
// that are still (or died as) the test binary: launchers that have not
// become a command, zombies included. Other tests' helpers do not count.
func launchers(t testing.TB) []int {
	t.Helper()
	self, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after
		// its closing parenthesis.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		comm := b[strings.IndexByte(string(b), '(')+1 : strings.LastIndexByte(string(b), ')')]
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && string(comm)+"\n" == string(self) {
			out = append(out, pid)
		}
	}
	return out
}

// TestSpareServesOneCommand: a command runs in the launcher that was
// ready before it, and the next command in another one.
func TestSpareServesOneCommand(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	first := waitReady(t, tier)
	ns1 := pidNS(t, first.cmd.Process.Pid)
	if got := runNS(t, tier, fx); got != ns1 {
		t.Fatalf("the command ran in %s, not in the ready launcher's %s", got, ns1)
	}
	select {
	case <-first.exited:
	default:
		t.Fatal("the used launcher has not been reaped")
	}
	second := waitReady(t, tier)
	if second == first {
		t.Fatal("the used launcher is ready again")
	}
	ns2 := pidNS(t, second.cmd.Process.Pid)
	if ns2 == ns1 {
		t.Fatal("the next launcher shares the used one's namespace")
	}
	if got := runNS(t, tier, fx); got != ns2 {
		t.Fatalf("the second command ran in %s, not in %s", got, ns2)
	}
}

// TestOneCommandTierKeepsNoSpare: a tier told that its process runs one
// command (standalone exec) starts its first launcher ahead but no
// replacement after the command.
func TestOneCommandTierKeepsNoSpare(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{OneCommand: true})
	ns := pidNS(t, waitReady(t, tier).cmd.Process.Pid)
	if got := runNS(t, tier, fx); got != ns {
		t.Fatalf("the command ran in %s, not in the launcher started ahead (%s)", got, ns)
	}
	tier.spares.mu.Lock()
	ready, starting := tier.spares.ready, tier.spares.starting
	tier.spares.mu.Unlock()
	if ready != nil || starting != nil {
		t.Fatalf("a one-command tier keeps another launcher (ready %v, starting %v)", ready != nil, starting != nil)
	}
	if l := launchers(t); len(l) != 0 {
		t.Fatalf("launcher processes left after the one command: %v", l)
	}
}

// TestCommandWaitsForTheStartingLauncher: a command that comes while the
// tier's first launcher is still starting (a standalone exec prepares its
// command as soon as the ledger commits) runs in that launcher once it is
// ready, rather than in a second one started beside it: no launcher is
// left over.
func TestCommandWaitsForTheStartingLauncher(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{OneCommand: true})
	tier.spares.mu.Lock()
	starting := tier.spares.starting != nil && tier.spares.ready == nil
	tier.spares.mu.Unlock()
	if !starting {
		t.Skip("the first launcher was ready before the command came; nothing to wait for")
	}
	runNS(t, tier, fx)
	tier.spares.mu.Lock()
	ready := tier.spares.ready
	tier.spares.mu.Unlock()
	if ready != nil {
		t.Fatal("the launcher started ahead was left ready: the command ran in another one")
	}
	if l := launchers(t); len(l) != 0 {
		t.Fatalf("launcher processes left after the one command: %v", l)
	}
}

// TestKilledSpareFallsBack: a ready launcher that died is not used; the
// command still runs, confined, in a launcher started for it.
func TestKilledSpareFallsBack(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	dead := waitReady(t, tier)
	ns := pidNS(t, dead.cmd.Process.Pid)
	if err := dead.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-dead.exited
	r := run(t, tier, fx, "readlink /proc/self/ns/pid; cat /proc/self/status")
	if r.Status != sandbox.StatusOK || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("run after a killed spare: %s", r.Observation())
	}
	if strings.Contains(r.Stdout, ns) {
		t.Fatal("the command ran in the killed launcher's namespace")
	}
	for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the command is not confined (%q missing):\n%s", want, r.Stdout)
		}
	}
}

// TestStaleSpareIsNotUsed: a ready launcher started with other settings
// (here another executable) is discarded, never given the command.
func TestStaleSpareIsNotUsed(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	stale := waitReady(t, tier)
	tier.executable = "/bin/true" // applies nothing: the run must abort
	r := tier.Run(context.Background(), sandbox.Request{Command: "echo RAN", Workspace: fx.ws})
	if r.Status != sandbox.StatusAborted || strings.Contains(r.Stdout, "RAN") {
		t.Fatalf("a stale ready launcher ran the command: %s", r.Observation())
	}
	select {
	case <-stale.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the stale launcher was not discarded")
	}
}

// TestCloseReapsSpares: Close leaves no launcher behind, ready or
// starting, and a closed tier still runs commands without keeping one.
func TestCloseReapsSpares(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	l := waitReady(t, tier)
	pid := l.cmd.Process.Pid
	closeLeavesNone(t, tier)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !os.IsNotExist(err) {
		t.Fatalf("the ready launcher %d is still there (%v)", pid, err)
	}
	runNS(t, tier, fx)
	if tier.spares.ready != nil || tier.spares.starting != nil {
		t.Fatal("a closed tier keeps a launcher ready")
	}
	if c := launchers(t); len(c) != 0 {
		t.Fatalf("launchers left after a run on a closed tier: %v", c)
	}

	// Closed while its first launcher is still starting.
	closeLeavesNone(t, newTestTier(t, sandbox.Options{}))
}

// closeLeavesNone closes tier and checks that no launcher is left.
func closeLeavesNone(t *testing.T, tier *Tier) {
	t.Helper()
	if err := tier.Close(); err != nil {
		t.Fatal(err)
	}
	if c := launchers(t); len(c) != 0 {
		t.Fatalf("launchers left after Close: %v", c)
	}
}

// TestConcurrentRuns: several commands at once each get their own
// launcher (at most one of them the ready one) and their own output.
func TestConcurrentRuns(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	waitReady(t, tier)
	const n = 6
	var wg sync.WaitGroup
	results := make([]sandbox.Result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = tier.Run(context.Background(), sandbox.Request{
				Command: fmt.Sprintf("echo run-%d; readlink /proc/self/ns/pid", i), Workspace: fx.ws, Timeout: 60 * time.Second})
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, r := range results {
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		if r.Status != sandbox.StatusOK || len(lines) != 2 || lines[0] != fmt.Sprintf("run-%d", i) {
			t.Fatalf("run %d: %s", i, r.Observation())
		}
		if seen[lines[1]] {
			t.Fatalf("two commands ran in the same launcher %s", lines[1])
		}
		seen[lines[1]] = true
	}
	closeLeavesNone(t, tier)
}

// TestSpareTakesHideListPerCommand: the launcher ready before a command
// masks what that command's request hides, not what an earlier one did.
func TestSpareTakesHideListPerCommand(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	secret := filepath.Join(fx.ws, "token.txt")
	if err := os.WriteFile(secret, []byte("TOKEN-TEXT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitReady(t, tier)
	r := run(t, tier, fx, "cat token.txt")
	if !strings.Contains(r.Stdout, "TOKEN-TEXT") {
		t.Fatalf("request 1 hides nothing, yet: %s", r.Observation())
	}
	waitReady(t, tier)
	r = run(t, tier, fx, "cat token.txt", func(req *sandbox.Request) { req.Hidden = []string{secret} })
	if strings.Contains(r.Stdout, "TOKEN-TEXT") || r.Enforced.HiddenPaths == nil || *r.Enforced.HiddenPaths < 1 {
		t.Fatalf("request 2 hides %s, yet: %s", secret, r.Observation())
	}
	waitReady(t, tier)
	r = run(t, tier, fx, "cat token.txt")
	if !strings.Contains(r.Stdout, "TOKEN-TEXT") {
		t.Fatalf("request 3 hides nothing, yet: %s", r.Observation())
	}
}

// TestUnreachableTierReapsSpare: a tier dropped without Close (a
// short-lived front end) does not leave its ready launcher behind.
func TestUnreachableTierReapsSpare(t *testing.T) {
	requireSandbox(t)
	pid := func() int {
		tier, err := New(sandbox.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return waitReady(t, tier.(*Tier)).cmd.Process.Pid
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		runtime.GC()
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ready launcher %d of an unreachable tier is still there", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadyLauncherPreparedItsNamespaces: a ready launcher has already
// brought up loopback in its network namespace before any command is
// known (launch.NamespacesArg), and a command still finds loopback up and
// no route out.
func TestReadyLauncherPreparedItsNamespaces(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	l := waitReady(t, tier)
	// A network namespace's fib_trie lists 127.0.0.1 only once lo is up.
	trie, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/fib_trie", l.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(trie), "127.0.0.1") {
		t.Fatalf("the ready launcher's loopback is not up before its command:\n%s", trie)
	}
	r := run(t, tier, fx, "cat /proc/net/fib_trie; cat /proc/net/route")
	if r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("run: %s", r.Observation())
	}
	if !strings.Contains(r.Stdout, "127.0.0.1") {
		t.Fatalf("the command's loopback is not up:\n%s", r.Stdout)
	}
	// /proc/net/route lists the IPv4 routes other than local ones: its
	// header line only.
	_, routes, ok := strings.Cut(r.Stdout, "Iface")
	if !ok || strings.Count(strings.TrimSpace(routes), "\n") != 0 {
		t.Fatalf("no route table, or routes out:\n%s", r.Stdout)
	}
}

// TestReadyLauncherEnvironment: a ready launcher's process has exactly
// launch.Env, the memory profiler off from the runtime's start among it,
// and nothing of IronVise's environment.
func TestReadyLauncherEnvironment(t *testing.T) {
	t.Setenv("IRONVISE_TEST_PARENT_ONLY", "1")
	tier := newTestTier(t, sandbox.Options{})
	l := waitReady(t, tier)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", l.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if !slices.Equal(got, launch.Env()) || !slices.Contains(got, "GODEBUG=memprofilerate=0") {
		t.Fatalf("the ready launcher's environment is %q; want %q with the memory profiler off", got, launch.Env())
	}
}
