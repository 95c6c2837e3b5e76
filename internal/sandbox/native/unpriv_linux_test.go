//go:build linux

package native

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/launcherbin"
)

// unprivEnv marks the copy of the test binary that TestUnprivileged runs
// as an unprivileged user.
const unprivEnv = "IRONVISE_TEST_UNPRIVILEGED_CHILD"

// TestUnprivileged runs the key escape attempts with IronVise itself
// unprivileged (uid 65534): the tier then needs a user namespace of its
// own, and RLIMIT_NPROC applies. It re-runs this test binary under setpriv.
func TestUnprivileged(t *testing.T) {
	if os.Getenv(unprivEnv) != "" {
		t.Skip("already the unprivileged child")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to drop to another user; as a user, TestEscapeSuite already runs unprivileged")
	}
	requireSandbox(t)
	requireTool(t, "/usr/bin/setpriv")
	// The test binary lives in a 0700 build directory: copy it where the
	// unprivileged user can execute it.
	dir, err := os.MkdirTemp("", "ironvise-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "native.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--",
		bin, "-test.run", "^TestUnprivilegedChild$", "-test.count=1", "-test.v")
	cmd.Env = []string{unprivEnv + "=1", "TMPDIR=/tmp", "HOME=/tmp", "PATH=/usr/bin:/bin"}
	// The launcher program too, for the child's tier to start its
	// launchers from inside the user namespace it needs.
	if b, err := builtLauncher(); err == nil {
		p := filepath.Join(dir, "launcher")
		if err := os.WriteFile(p, b.program, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, unprivLauncherEnv+"="+p+":"+b.sha256)
	} else if !errors.Is(err, errNoGo) {
		t.Fatal(err)
	}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestUnprivilegedChild") {
		t.Fatalf("unprivileged run failed: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("the unprivileged run skipped cases:\n%s", out)
	}
	t.Logf("%d key attempts passed as uid 65534, %d through the launcher program", strings.Count(string(out), "    --- PASS: TestUnprivilegedChild/escape/"),
		strings.Count(string(out), "    --- PASS: TestUnprivilegedChild/escape_embedded_launcher/"))
	if b, err := builtLauncher(); err == nil && b.sha256 != "" && !strings.Contains(string(out), "--- PASS: TestUnprivilegedChild/escape_embedded_launcher") {
		t.Fatalf("the key attempts through the launcher program did not pass as uid 65534:\n%s", out)
	}
}

// unprivLauncherEnv hands the unprivileged child the built launcher
// program, as PATH:SHA256.
const unprivLauncherEnv = "IRONVISE_TEST_UNPRIVILEGED_LAUNCHER"

// TestUnprivilegedChild is the part TestUnprivileged runs as uid 65534.
func TestUnprivilegedChild(t *testing.T) {
	if os.Getenv(unprivEnv) == "" {
		t.Skip("run by TestUnprivileged")
	}
	if os.Geteuid() == 0 {
		t.Fatal("the unprivileged child runs as root")
	}
	tier := newTestTier(t, sandbox.Options{})
	fx := newFixture(t)
	r := run(t, tier, fx, "id -u; cat /proc/self/uid_map")
	if !strings.Contains(strings.Join(r.Enforced.Namespaces, ","), "user") || *r.Enforced.UID != 65534 {
		t.Fatalf("enforced %+v", r.Enforced)
	}
	t.Run("escape", func(t *testing.T) { runEscapeSuite(t, sandbox.Options{}, true) })
	t.Run("hidden_paths", func(t *testing.T) { testHiddenPathsAreMasked(t, sandbox.Options{}) })
	t.Run("network_namespace", func(t *testing.T) { testNetworkNamespace(t, sandbox.Options{}) })
	t.Run("scratch_tmpfs", func(t *testing.T) { testScratchIsACappedTmpfs(t, sandbox.Options{}) })
	t.Run("unix_socketpair", TestUnixSocketpairEscape)
	t.Run("proxy_mode", func(t *testing.T) { testProxyModeOptedInLoopback(t, sandbox.Options{}) })
	t.Run("overlay_workflow", func(t *testing.T) { testOverlayWorkflow(t, sandbox.Options{}) })
	t.Run("overlay_escapes", func(t *testing.T) { testOverlayEscapes(t, sandbox.Options{}) })
	t.Run("nproc", func(t *testing.T) {
		r := run(t, tier, fx, `i=0; while [ $i -lt 200 ]; do sleep 2 & i=$((i+1)); printf '%s ' $i; done; echo ALL`,
			func(q *sandbox.Request) { q.Limits.NProc = 20 })
		if strings.Contains(r.Stdout, "ALL") {
			t.Fatalf("RLIMIT_NPROC did not stop the loop: %s", r.Observation())
		}
	})
	t.Run("confine_self", TestConfineSelf)
	if v := os.Getenv(unprivLauncherEnv); v != "" {
		t.Run("escape_embedded_launcher", func(t *testing.T) {
			p, sum, _ := strings.Cut(v, ":")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			e, err := launcherbin.FromBytes(b, sum)
			if err != nil {
				t.Fatal(err)
			}
			tier := newTestTier(t, sandbox.Options{})
			tier.executable, tier.embedded = e.Path, e
			runEscapeSuiteOn(t, tier, sandbox.Options{}, true)
		})
	}
	t.Run("work", func(t *testing.T) {
		r := run(t, tier, fx, `grep -rn needle . | wc -l; echo x > "$TMPDIR/f" && cat "$TMPDIR/f"`)
		exitZero(t, r)
		contains(t, r, "2\nx")
	})
}
