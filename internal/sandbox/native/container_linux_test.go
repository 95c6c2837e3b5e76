//go:build linux

package native

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
)

// TestContainerModeEscapeSuiteAsUser runs the escape suite's key attempts
// in container mode (no namespaces), with ECTO_SANDBOX_USER so that
// RLIMIT_NPROC binds and the fork bomb is bounded on a host without a pids
// limit.
func TestContainerModeEscapeSuiteAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching user needs root")
	}
	runEscapeSuite(t, sandbox.Options{User: "nobody", ContainerMode: true}, true)
}

// TestContainerModeEscapeSuite runs the whole escape suite in container
// mode as the user the tests run as.
func TestContainerModeEscapeSuite(t *testing.T) {
	runEscapeSuite(t, sandbox.Options{ContainerMode: true}, false)
}

// notInContainerMode says why an escape case does not apply to opts in
// container mode, and which test covers what it would.
func notInContainerMode(name string, opts sandbox.Options) (string, bool) {
	if !opts.ContainerMode {
		return "", false
	}
	switch name {
	case "proc_parent_and_init_environ_mem":
		return "container mode shares the container's /proc: TestContainerModeCannotReachIronVise", true
	case "memfd_and_scratch_exec":
		return "the scratch directory is not a noexec mount in container mode: TestContainerModeScratchExec", true
	case "fork_bomb":
		if opts.User == "" && os.Geteuid() == 0 {
			return "RLIMIT_NPROC does not bind root and this host's cgroup may have no pids limit: TestContainerModeEscapeSuiteAsUser runs it", true
		}
	}
	return "", false
}

// TestContainerModeCannotReachIronVise: without a PID namespace the
// command sees the container's /proc, IronVise's pid included. Landlock
// (ptrace restriction, signal scoping) and seccomp keep it from reading
// IronVise's environment or memory, signalling it and tracing it; the
// same holds for the reaper, the command's parent.
func TestContainerModeCannotReachIronVise(t *testing.T) {
	requireTool(t, py3)
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{ContainerMode: true})
	secret := "IRONVISE_PARENT_SECRET_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Setenv("IRONVISE_TEST_PARENT_SECRET", secret)
	pid := strconv.Itoa(os.Getpid())
	cmd := "cat /proc/" + pid + "/environ; echo; dd if=/proc/" + pid + "/mem of=/dev/null bs=1 count=1 skip=4096 2>&1; " +
		"ls /proc/" + pid + "/fd 2>&1; readlink /proc/" + pid + "/cwd 2>&1; " +
		"kill -0 " + pid + " && echo SIGNALLED-IRONVISE; kill -STOP " + pid + " && echo STOPPED-IRONVISE; " +
		"cat /proc/$PPID/environ; kill -0 $PPID && echo SIGNALLED-REAPER; kill -TERM $PPID && echo TERMINATED-REAPER; " +
		fx.py("kill", pid, "0") + "; " + fx.py("syscall", nr(t, "ptrace"), "16", pid, "0", "0") + "; echo DONE"
	r := run(t, tier, fx, cmd)
	noLeak(t, r, secret)
	for _, kv := range launch.Env() {
		noLeak(t, r, kv) // the reaper's environment
	}
	for _, s := range []string{"SIGNALLED-IRONVISE", "STOPPED-IRONVISE", "SIGNALLED-REAPER", "TERMINATED-REAPER", "OK KILLED", "OK 0"} {
		noLeak(t, r, s)
	}
	contains(t, r, "DONE")
	contains(t, r, "ERR 1 EPERM") // python's kill and ptrace
	if r.Enforced.Isolation != sandbox.IsolationContainer || len(r.Enforced.Namespaces) != 0 {
		t.Fatalf("recorded isolation %q, namespaces %v; want container and none", r.Enforced.Isolation, r.Enforced.Namespaces)
	}
	if !alive(os.Getpid()) {
		t.Fatal("the test process is stopped")
	}
	if testing.Verbose() {
		t.Log(r.Observation())
	}
}

// TestContainerModeScratchExec: the scratch directory is a plain
// directory, not a noexec tmpfs, so what keeps the command from running a
// binary it wrote there is Landlock (no execute right) and seccomp
// (memfd_create). A binary loaded by ld.so's mmap is beyond both; it runs
// under the same confinement as the command (docs/reference/sandboxing.md).
func TestContainerModeScratchExec(t *testing.T) {
	requireTool(t, py3)
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{ContainerMode: true})
	r := run(t, tier, fx, fx.py("memfd_exec")+"; cp /bin/echo $TMPDIR/e && $TMPDIR/e SCRATCH-EXEC-OK; echo DONE")
	noLeak(t, r, "EXEC-OK")
	contains(t, r, "DONE")
}

// TestContainerModeNoSurvivors: background, setsid'd and double-forked
// processes all end with the command, and with a timed-out one.
func TestContainerModeNoSurvivors(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{ContainerMode: true})
	for _, tc := range []struct {
		name    string
		tail    string
		timeout time.Duration
		want    sandbox.Status
	}{
		{"exit", "echo STARTED", 60 * time.Second, sandbox.StatusOK},
		{"timeout", "echo STARTED; sleep 100", time.Second, sandbox.StatusTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := "300." + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
			cmd := "sleep " + mark + " & setsid sh -c 'sleep " + mark + "' & ( ( sleep " + mark + " & ) & ); " +
				"setsid sh -c '( sleep " + mark + " & )' </dev/null >/dev/null 2>&1; sleep 0.2; " + tc.tail
			start := time.Now()
			r := tier.Run(context.Background(), sandbox.Request{Command: cmd, Workspace: fx.ws, Timeout: tc.timeout})
			if r.Status != tc.want {
				t.Fatalf("status %s; want %s: %s", r.Status, tc.want, r.Observation())
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Fatalf("the run took %s", d)
			}
			contains(t, r, "STARTED")
			if pids := survivors(mark); len(pids) > 0 {
				for _, p := range pids {
					syscall.Kill(p, syscall.SIGKILL)
				}
				t.Fatalf("processes %v outlived the command", pids)
			}
		})
	}
}

// TestContainerModeKeepsTheGroup: in container mode the command cannot
// leave its process group (setsid, setpgid), which its reaper kills in one
// call; a process still in the group after the command's end is killed.
func TestContainerModeKeepsTheGroup(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{ContainerMode: true})
	r := run(t, tier, fx, "setsid echo LEFT-THE-SESSION; "+
		`perl -e 'setpgrp(0, 0) or print "setpgid: $!\n"; print "pgid ", getpgrp() == getpgrp(getppid()) ? "kept" : "changed", "\n"'; `+
		// coreutils' timeout asks for a process group of its own and
		// goes on without one, as the reference says.
		`timeout 5 sh -c 'echo TIMEOUT-RAN'; echo DONE`)
	noLeak(t, r, "LEFT-THE-SESSION")
	contains(t, r, "Operation not permitted")
	contains(t, r, "setpgid: Operation not permitted")
	contains(t, r, "pgid kept")
	contains(t, r, "TIMEOUT-RAN")
	contains(t, r, "DONE")
}

// TestContainerModeRefusesReachableProtectedPaths: without a mount
// namespace nothing can be masked, so a protected path the command could
// read (in the workspace, or under a system root) makes the run fail
// closed, and one elsewhere is out of reach by Landlock.
func TestContainerModeRefusesReachableProtectedPaths(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{ContainerMode: true, Hidden: []string{filepath.Join(fx.home, ".ssh")}})
	// Outside the workspace and every root: allowed, and unreadable.
	r := run(t, tier, fx, "cat "+filepath.Join(fx.home, ".ssh", "id_ed25519")+"; echo DONE")
	noLeak(t, r, fx.secretText)
	contains(t, r, "DONE")

	// In the workspace.
	keys := filepath.Join(fx.ws, ".keys")
	if err := os.Mkdir(keys, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, keys, "k", fx.secretText)
	r = tier.Run(context.Background(), sandbox.Request{Command: "cat .keys/k", Workspace: fx.ws, Hidden: []string{keys}, Timeout: 30 * time.Second})
	if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, keys) || !strings.Contains(r.Reason, "fix:") {
		t.Fatalf("a workspace holding a protected path: %s", r.Observation())
	}
	noLeak(t, r, fx.secretText)
	// A missing one is nothing to read: no refusal.
	run(t, tier, fx, "true", func(q *sandbox.Request) { q.Hidden = []string{filepath.Join(fx.ws, "absent")} })

	// Under a system root every command may read.
	if os.Geteuid() != 0 {
		t.Skip("creating a file under /etc needs root")
	}
	f, err := os.CreateTemp("/etc", "ironvise-test-protected-")
	if err != nil {
		t.Skipf("cannot create a file under /etc: %v", err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	r = tier.Run(context.Background(), sandbox.Request{Command: "cat " + f.Name(), Workspace: fx.ws, Hidden: []string{f.Name()}, Timeout: 30 * time.Second})
	if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, f.Name()) || !strings.Contains(r.Reason, "move them out of") {
		t.Fatalf("a protected path under /etc: %s", r.Observation())
	}
}

// TestContainerModeMetadata: a command running as IronVise's uid cannot
// change the mode, owner, xattrs or times of files outside (it owns them,
// and no read-only mount stands in the way); touch to now still works in
// scratch. A command switched to its own user keeps chmod in scratch.
func TestContainerModeMetadata(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{ContainerMode: true})
	r := run(t, tier, fx, "chmod 4777 "+fx.victim+"; chmod 0777 "+fx.out+"; touch -d 2001-01-01 "+fx.victim+"; touch $TMPDIR/new && echo TOUCHED; echo DONE")
	contains(t, r, "TOUCHED")
	contains(t, r, "DONE")
	for _, p := range []string{fx.victim, fx.out} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSetuid != 0 || fi.ModTime().Year() == 2001 {
			t.Fatalf("%s changed: %v %v", p, fi.Mode(), fi.ModTime())
		}
	}
	if r.Enforced.SeccompProfileSHA256 == tier.seccompHashOfBuild(t) {
		t.Fatal("container mode recorded the command profile's hash, not the ownerless one")
	}
	if os.Geteuid() != 0 {
		return
	}
	user := newTestTier(t, sandbox.Options{ContainerMode: true, User: "nobody"})
	r = run(t, user, fx, "echo x > $TMPDIR/f && chmod 600 $TMPDIR/f && echo CHMODDED; stat -c %a $TMPDIR/f")
	contains(t, r, "CHMODDED")
	contains(t, r, "600")
}

// seccompHashOfBuild is the hash of the command profile (seccomp.Build).
func (t *Tier) seccompHashOfBuild(tb testing.TB) string {
	p, err := seccomp.Build()
	if err != nil {
		tb.Fatal(err)
	}
	return p.SHA256
}

// TestNamespacesRecordIsolation: the default mode records its isolation.
func TestNamespacesRecordIsolation(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	r := run(t, tier, fx, "true")
	if r.Enforced.Isolation != sandbox.IsolationNamespaces {
		t.Fatalf("isolation %q; want %q", r.Enforced.Isolation, sandbox.IsolationNamespaces)
	}
}

// helperEnv names the helper a re-executed test binary runs.
const helperEnv = "IRONVISE_TEST_HELPER"

// TestRootWithoutSysAdminUsesUserNamespace: root without CAP_SYS_ADMIN in
// its effective set (root in a default podman or docker container) gets
// the user-namespace path, as an unprivileged user does, and a full
// namespace tier; only uid 0 is mapped, so ECTO_SANDBOX_USER is refused
// there with the fixes. setpriv drops CAP_SYS_ADMIN from the bounding set
// of a re-executed test binary, which then runs the tier.
func TestRootWithoutSysAdminUsesUserNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the case is root without CAP_SYS_ADMIN")
	}
	requireSandbox(t)
	requireTool(t, "/usr/bin/setpriv")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/setpriv", "--bounding-set", "-sys_admin", "--", exe, "-test.run", "^TestHelperNoSysAdmin$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=nosysadmin")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHelperNoSysAdmin") {
		t.Fatalf("helper without CAP_SYS_ADMIN: %v\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
}

// TestHelperNoSysAdmin is the body of the test above; it runs only when
// re-executed by it.
func TestHelperNoSysAdmin(t *testing.T) {
	if os.Getenv(helperEnv) != "nosysadmin" {
		t.Skip("run by TestRootWithoutSysAdminUsesUserNamespace")
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if eff, ok := capEff(string(status)); !ok || eff&(1<<capSysAdmin) != 0 || os.Geteuid() != 0 {
		t.Fatalf("want root without CAP_SYS_ADMIN; euid %d, CapEff %#x", os.Geteuid(), eff)
	}
	if !needsUserNS() {
		t.Fatal("root without CAP_SYS_ADMIN does not choose a user namespace")
	}
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	r := run(t, tier, fx, "cat /proc/self/uid_map; echo x > $TMPDIR/x && cat $TMPDIR/x; cat "+fx.secret+"; echo DONE")
	exitZero(t, r)
	noLeak(t, r, fx.secretText)
	if !slices.Contains(r.Enforced.Namespaces, "user") || !slices.Contains(r.Enforced.Namespaces, "pid") || r.Enforced.Isolation != sandbox.IsolationNamespaces {
		t.Fatalf("namespaces %v, isolation %q; want user, pid, … and namespaces", r.Enforced.Namespaces, r.Enforced.Isolation)
	}
	if fields := strings.Fields(r.Stdout); len(fields) < 3 || fields[0] != "0" || fields[1] != "0" || fields[2] != "1" {
		t.Fatalf("uid_map %q; want root alone mapped (0 0 1)", r.Stdout)
	}
	_, err = New(sandbox.Options{User: "nobody"})
	if err == nil || !strings.Contains(err.Error(), "CAP_SYS_ADMIN") || !strings.Contains(err.Error(), "ECTO_SANDBOX_CONTAINER_MODE=true") {
		t.Fatalf("ECTO_SANDBOX_USER without CAP_SYS_ADMIN: %v", err)
	}
	// Container mode switches user in the container's own user namespace.
	cm := newTestTier(t, sandbox.Options{User: "nobody", ContainerMode: true})
	r = run(t, cm, fx, "id -u")
	if !strings.Contains(r.Stdout, "65534") {
		t.Fatalf("container mode with ECTO_SANDBOX_USER: %s", r.Observation())
	}
}

// TestDoctorContainerMode: doctor lists every guarantee in container mode:
// the namespace-backed ones as delegated to the container, the rest
// enforced and probed, the protected paths by the refusal probe, and the
// signal probe aimed at IronVise's real pid.
func TestDoctorContainerMode(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{ContainerMode: true})
	rep := sandbox.Doctor(context.Background(), tier, true)
	if !rep.Usable() {
		t.Fatalf("doctor: %s", rep.Problem)
	}
	if rep.Enforced == nil || rep.Enforced.Isolation != sandbox.IsolationContainer {
		t.Fatalf("enforced %+v; want isolation container", rep.Enforced)
	}
	delegated := map[string]bool{sandbox.GNetNamespace: true, sandbox.GScratchCapped: true}
	for i, g := range rep.Guarantees {
		if g.Name != sandbox.GuaranteeNames()[i] {
			t.Fatalf("guarantee %d is %q; want %q", i, g.Name, sandbox.GuaranteeNames()[i])
		}
		switch {
		case delegated[g.Name]:
			if g.State != sandbox.StateDelegated || !strings.Contains(g.Evidence, "container") {
				t.Errorf("%s: %s (%s); want delegated to the container", g.Name, g.State, g.Evidence)
			}
		case g.Name == sandbox.GFSOverlayIsolated:
			// Overlay mode needs a mount namespace of the command's
			// own: container mode refuses it.
			if g.State != sandbox.StateNotApplicable || !strings.Contains(g.Evidence, "container mode") {
				t.Errorf("%s: %s (%s); want not applicable, refused in container mode", g.Name, g.State, g.Evidence)
			}
		case g.Name == sandbox.GNetProxyOnly:
			// Proxy mode needs a network namespace of the command's
			// own: container mode refuses it.
			if g.State != sandbox.StateNotApplicable || !strings.Contains(g.Evidence, "container mode") {
				t.Errorf("%s: %s (%s); want not applicable, refused in container mode", g.Name, g.State, g.Evidence)
			}
		case g.Name == sandbox.GLimitProcesses:
			// Root is exempt from RLIMIT_NPROC: the cgroup's pids limit
			// decides, and a host without one is reported as such.
			if g.State == sandbox.StateEnforced && os.Geteuid() == 0 {
				t.Errorf("%s enforced for root: %s", g.Name, g.Evidence)
			}
			if !g.Probed {
				t.Errorf("%s was not probed", g.Name)
			}
		default:
			if g.State != sandbox.StateEnforced || !g.Probed {
				t.Errorf("%s: %s, probed %v (%s)", g.Name, g.State, g.Probed, g.Evidence)
			}
		}
	}
	byName := map[string]sandbox.Guarantee{}
	for _, g := range rep.Guarantees {
		byName[g.Name] = g
	}
	if ev := byName[sandbox.GProtectedHidden].Evidence; !strings.Contains(ev, "kept out by construction") {
		t.Errorf("protected paths: %s", ev)
	}
	if ev := byName[sandbox.GSignalsScoped].Evidence; strings.Contains(ev, "PID namespace") || !strings.Contains(ev, "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("signals: %s; want the probe of IronVise's own pid", ev)
	}
	// The command cannot leave its process group: the evidence says so
	// instead of claiming a setsid'd process was tried.
	if ev := byName[sandbox.GNoSurvivors].Evidence; !strings.Contains(ev, "setsid is refused") {
		t.Errorf("no survivors: %s; want setsid reported refused", ev)
	}
}
