//go:build linux

package native

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
)

// TestFailClosed injects kernel errors into the launcher's steps (the
// errno replaces the real call and takes the same path to the parent) and
// checks that the command never runs and the action is aborted with a
// reason naming the fix.
func TestFailClosed(t *testing.T) {
	cases := []struct {
		step  string
		errno syscall.Errno
		want  []string
	}{
		{launch.StepLandlock, syscall.ENOSYS, []string{"landlock is not supported by this kernel", "CONFIG_SECURITY_LANDLOCK", "lsm="}},
		{launch.StepLandlock, syscall.EOPNOTSUPP, []string{"not enabled at boot", "ECTO_DOCKER_IMAGE"}},
		{launch.StepSeccomp, syscall.EINVAL, []string{"the kernel rejected the seccomp filter", "CONFIG_SECCOMP_FILTER"}},
		{launch.StepSeccomp, syscall.EACCES, []string{"seccomp", "permission denied"}},
		{launch.StepFDs, syscall.ENOSYS, []string{"close_range", "Linux 5.11"}},
		{launch.StepMounts, syscall.EPERM, []string{"mount namespace", "unprivileged user namespaces"}},
		{launch.StepNNP, syscall.EINVAL, []string{"PR_SET_NO_NEW_PRIVS"}},
		{launch.StepCaps, syscall.EPERM, []string{"capabilit"}},
		{launch.StepRlimits, syscall.EPERM, []string{"setrlimit"}},
		{launch.StepPidMax, syscall.EPERM, []string{"pid_max"}},
		{launch.StepExec, syscall.ENOENT, []string{"execve /bin/sh", "install a POSIX shell"}},
	}
	fx := newFixture(t)
	for _, tc := range cases {
		t.Run(tc.step+"_"+tc.errno.Error(), func(t *testing.T) {
			if tc.step == launch.StepPidMax && !launch.PidMaxNamespaced() {
				t.Skip("pid_max is not namespaced on this kernel: the step does not run")
			}
			tier := newTestTier(t, sandbox.Options{})
			tier.inject = map[string]int{tc.step: int(tc.errno)}
			marker := filepath.Join(fx.out, "ran-"+tc.step)
			r := tier.Run(context.Background(), sandbox.Request{Command: "echo RAN; touch " + marker, Workspace: fx.ws})
			if r.Status != sandbox.StatusAborted {
				t.Fatalf("status %s; want aborted (%s)", r.Status, r.Observation())
			}
			if strings.Contains(r.Stdout, "RAN") || r.ExitCode != nil {
				t.Fatalf("the command ran: %s", r.Observation())
			}
			absent(t, marker)
			if r.Enforced != nil {
				t.Fatalf("an aborted run claims enforcement: %+v", r.Enforced)
			}
			head := r.Headline()
			if !strings.HasPrefix(head, "[sandbox aborted: sandbox setup failed: "+tc.step) {
				t.Fatalf("headline %q", head)
			}
			for _, w := range tc.want {
				if !strings.Contains(strings.ToLower(r.Reason), strings.ToLower(w)) {
					t.Errorf("reason %q lacks %q", r.Reason, w)
				}
			}
			if strings.ContainsAny(r.Reason, "\n\r") {
				t.Errorf("reason is not one line: %q", r.Reason)
			}
			if r.ProcessExitCode() != sandbox.ExitSandboxAborted {
				t.Errorf("exit code %d; want 125", r.ProcessExitCode())
			}
		})
	}
}

// TestLauncherFailuresAbort covers failures outside the kernel steps: a
// launcher that cannot start, a malformed specification, a workspace that
// is not a directory.
func TestLauncherFailuresAbort(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})

	bad := newTestTier(t, sandbox.Options{})
	bad.executable = "/nonexistent/ironvise"
	r := bad.Run(context.Background(), sandbox.Request{Command: "echo RAN", Workspace: fx.ws})
	if r.Status != sandbox.StatusAborted || strings.Contains(r.Stdout, "RAN") {
		t.Fatalf("missing launcher: %s", r.Observation())
	}

	// /bin/true exits 0 without applying anything: no applied record
	// means no confirmation, so the action is aborted.
	fake := newTestTier(t, sandbox.Options{})
	fake.executable = "/bin/true"
	r = fake.Run(context.Background(), sandbox.Request{Command: "echo RAN", Workspace: fx.ws})
	if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, "before applying the sandbox") {
		t.Fatalf("launcher that applies nothing: %s", r.Observation())
	}

	r = tier.Run(context.Background(), sandbox.Request{Command: "echo RAN", Workspace: filepath.Join(fx.ws, "README")})
	if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, "not a directory") {
		t.Fatalf("file as workspace: %s", r.Observation())
	}
	r = tier.Run(context.Background(), sandbox.Request{Command: "", Workspace: fx.ws})
	if r.Status != sandbox.StatusAborted {
		t.Fatalf("empty command: %s", r.Observation())
	}
	r = tier.Run(context.Background(), sandbox.Request{Command: "echo RAN", Workspace: "relative"})
	if r.Status != sandbox.StatusAborted {
		t.Fatalf("relative workspace: %s", r.Observation())
	}

	// The launcher itself, started without a specification (no pipe, or
	// one closed empty) or with a malformed one, reports a structured
	// error and exits 125; waiting for a specification, it first says it
	// is ready.
	for _, args := range [][]string{{LauncherArg}, {LauncherArg, "{not json"}} {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		c := exec.Command("/proc/self/exe", args...)
		c.ExtraFiles = []*os.File{pw}
		if len(args) == 1 {
			specR, specW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			specW.Close()
			defer specR.Close()
			c.ExtraFiles = append(c.ExtraFiles, specR)
		}
		err = c.Run()
		pw.Close()
		out, rerr := io.ReadAll(pr)
		pr.Close()
		if rerr != nil {
			t.Fatal(rerr)
		}
		if len(args) == 1 {
			var ok bool
			if out, ok = bytes.CutPrefix(out, []byte(launch.Ready)); !ok {
				t.Fatalf("launcher without a specification did not say it was ready: %q", out)
			}
		}
		_, _, se := readStatus(bytes.NewReader(out))
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != launch.ExitFailed || se == nil || se.Step != launch.StepSpec {
			t.Fatalf("launcher %q: err %v, status %+v", args, err, se)
		}
	}
}

// TestPermissiveRunsUnconfinedWithAWarning: ECTO_SANDBOX_PERMISSIVE=true.
func TestPermissiveRunsUnconfinedWithAWarning(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	tier, err := sandbox.Select(sandbox.Options{Permissive: true, Logger: log}, sandbox.Factories{Native: New})
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t)
	for i := range 2 {
		r := tier.Run(context.Background(), sandbox.Request{Command: "echo unconfined > wrote.txt; cat wrote.txt", Workspace: fx.ws,
			Env: []string{"OPENAI_API_KEY=sk-x"}})
		if r.Status != sandbox.StatusPermissive || r.Tier != sandbox.TierNone || r.Enforced != nil {
			t.Fatalf("got %s/%s enforced=%v", r.Tier, r.Status, r.Enforced)
		}
		if !strings.Contains(r.Stdout, "unconfined") || r.Reason != sandbox.PermissiveReason {
			t.Fatalf("permissive run: %s (%s)", r.Observation(), r.Reason)
		}
		if n := strings.Count(logs.String(), "WITHOUT OS confinement"); n != i+1 {
			t.Fatalf("after %d runs, %d warnings; want one per run", i+1, n)
		}
	}
	if _, err := os.Stat(filepath.Join(fx.ws, "wrote.txt")); err != nil {
		t.Fatal("permissive mode did not run the command on the host")
	}
}

// TestSelection follows docs/design/sandbox.md#tier-selection: firecracker,
// then docker, then the native tier; a forced or configured tier that is not
// built is reported, never replaced by another.
func TestSelection(t *testing.T) {
	f := sandbox.Factories{Native: New}
	cases := []struct {
		opts sandbox.Options
		want sandbox.TierName
		ok   bool
	}{
		{sandbox.Options{}, sandbox.TierNativeLinux, true},
		{sandbox.Options{Tier: "native", DockerImage: "alpine:3.19"}, sandbox.TierNativeLinux, true},
		{sandbox.Options{DockerImage: "alpine:3.19"}, sandbox.TierDocker, false},
		{sandbox.Options{DockerImage: "alpine:3.19", FCBinary: "/usr/local/bin/firecracker"}, sandbox.TierFirecracker, false},
		{sandbox.Options{Tier: "docker"}, sandbox.TierDocker, false},
		{sandbox.Options{Tier: "firecracker"}, sandbox.TierFirecracker, false},
	}
	fx := newFixture(t)
	for _, tc := range cases {
		tier, err := sandbox.Select(tc.opts, f)
		if err != nil {
			t.Fatal(err)
		}
		if tier.Name() != tc.want {
			t.Errorf("%+v: tier %s; want %s", tc.opts, tier.Name(), tc.want)
		}
		if tc.ok {
			continue
		}
		err = tier.Available(context.Background())
		if !errors.Is(err, sandbox.ErrNotBuilt) || !errors.Is(err, sandbox.ErrUnavailable) {
			t.Errorf("%s: Available = %v; want ErrNotBuilt", tc.want, err)
		}
		r := tier.Run(context.Background(), sandbox.Request{Command: "echo RAN > ran.txt", Workspace: fx.ws})
		if r.Status != sandbox.StatusAborted || r.Tier != tc.want {
			t.Errorf("%s: run %s/%s; want aborted", tc.want, r.Tier, r.Status)
		}
		absent(t, filepath.Join(fx.ws, "ran.txt"))
		if err := tier.SelfTest(context.Background()); err == nil {
			t.Errorf("%s: self-test passed", tc.want)
		}
	}
	if _, err := sandbox.Select(sandbox.Options{Tier: "vm"}, f); err == nil {
		t.Error("an unknown forced tier was accepted")
	}
	if _, err := sandbox.Select(sandbox.Options{User: "no-such-user-ironvise"}, f); err == nil {
		t.Error("an unknown ECTO_SANDBOX_USER was accepted")
	}
}
