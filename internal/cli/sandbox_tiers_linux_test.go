//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// podmanImage returns the local image the container tests run, or skips
// (fails under IRONVISE_TEST_PODMAN=1, as in CI) when Podman or the image is
// missing. scripts/setup-podman.sh provides both, offline.
func podmanImage(t *testing.T) string {
	t.Helper()
	img := os.Getenv("IRONVISE_TEST_PODMAN_IMAGE")
	if img == "" {
		img = "localhost/ironvise-busybox:latest"
	}
	var miss string
	if _, err := exec.LookPath("podman"); err != nil {
		miss = "podman is not installed"
	} else if err := exec.Command("podman", "image", "exists", img).Run(); err != nil {
		miss = "image " + img + " is not present"
	}
	if miss != "" {
		if os.Getenv("IRONVISE_TEST_PODMAN") == "1" {
			t.Fatalf("%s (IRONVISE_TEST_PODMAN=1 requires it; run scripts/setup-podman.sh)", miss)
		}
		t.Skipf("%s: skipping the real-container test (run scripts/setup-podman.sh, or set IRONVISE_TEST_PODMAN=1 to make this a failure)", miss)
	}
	return img
}

// containerWorkspace is a workspace the container's nobody user can read.
func containerWorkspace(t *testing.T) string {
	t.Helper()
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.Chmod(ws, 0o755)
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("release notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// sandboxResult returns the sandbox_result payload of a session.
func sandboxResult(t *testing.T, env map[string]string, id string) map[string]any {
	t.Helper()
	for _, e := range events(t, env, id) {
		if e.Type == ledger.TypeSandboxResult {
			var m map[string]any
			if err := json.Unmarshal(e.Payload, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("session %s has no sandbox_result", id)
	return nil
}

// TestExecThroughPodman runs `ironvise exec` end to end through the
// container tier with real Podman: checks, commit, container, ledger.
func TestExecThroughPodman(t *testing.T) {
	img := podmanImage(t)
	ws := containerWorkspace(t)
	env := cliEnv(t, "DATABASE_URL", "", "ECTO_DOCKER_IMAGE", img, "ECTO_DOCKER_RUNTIME", "podman")

	code, out, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "cat notes.txt; id -u; pwd; touch notes.txt || echo read-only; exit 3")
	if code != 3 || out != "release notes\n65534\n/workspace\nread-only\n" || !strings.Contains(errOut, "Read-only file system") {
		t.Fatalf("exit %d; stdout %q stderr %q", code, out, errOut)
	}
	id := sessionOf(t, errOut)
	sr := sandboxResult(t, env, id)
	enf, _ := sr["enforced"].(map[string]any)
	if sr["tier"] != "podman" || sr["status"] != "ok" || sr["exit_code"] != float64(3) || enf == nil ||
		enf["runtime"] != "podman" || enf["image"] != img || !strings.HasPrefix(fmt.Sprint(enf["image_digest"]), "sha256:") ||
		enf["runtime_version"] == nil || enf["network"] != "none" {
		t.Fatalf("sandbox_result %v", sr)
	}
	if code, _, errOut := runCLI(t, env, "", "verify-session", id); code != 0 {
		t.Fatalf("verify-session: exit %d %s", code, errOut)
	}

	// The wall-clock limit removes the container: exit 128 + SIGKILL.
	env["ECTO_DOCKER_TIMEOUT"] = "2"
	code, _, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--", "sleep 60")
	if code != 128+9 {
		t.Fatalf("timeout: exit %d %s", code, errOut)
	}
	if sr := sandboxResult(t, env, sessionOf(t, errOut)); sr["status"] != "timeout" || sr["tier"] != "podman" {
		t.Fatalf("timeout recorded as %v", sr)
	}
}

// TestTiersFailClosed: a selected tier that cannot be applied aborts the
// command with exit 125 and a recorded reason; it never falls back to a
// weaker tier, and the command does not run anywhere.
func TestTiersFailClosed(t *testing.T) {
	// No docker and no podman on PATH for the container cases.
	t.Setenv("PATH", t.TempDir())
	cases := []struct {
		name string
		env  []string
		tier string
		want string
	}{
		{"firecracker binary missing, docker image set too", []string{"ECTO_FC_BINARY", "/nonexistent/firecracker", "ECTO_DOCKER_IMAGE", "alpine:3.19"},
			"firecracker", "the firecracker binary /nonexistent/firecracker cannot be used"},
		{"forced firecracker without a binary", []string{"ECTO_SANDBOX_TIER", "firecracker"}, "firecracker", "ECTO_FC_BINARY is not set"},
		{"docker image but no runtime", []string{"ECTO_DOCKER_IMAGE", "alpine:3.19", "ECTO_DOCKER_RUNTIME", "docker"}, "docker", "docker is not installed"},
		{"podman forced but not installed", []string{"ECTO_DOCKER_IMAGE", "alpine:3.19", "ECTO_DOCKER_RUNTIME", "podman"}, "podman", "podman is not installed"},
		{"forced docker without an image", []string{"ECTO_SANDBOX_TIER", "docker"}, "docker", "ECTO_DOCKER_IMAGE is not set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			marker := filepath.Join(ws, "ran")
			env := cliEnv(t, append([]string{"DATABASE_URL", ""}, tc.env...)...)
			code, out, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "touch "+marker+"; echo ran")
			if code != ExitExecAborted || out != "" || !strings.Contains(errOut, "sandbox aborted") || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d; stdout %q stderr %q; want 125 and %q", code, out, errOut, tc.want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran")
			}
			sr := sandboxResult(t, env, sessionOf(t, errOut))
			if sr["tier"] != tc.tier || sr["status"] != "aborted" || !strings.Contains(fmt.Sprint(sr["reason"]), tc.want) || sr["exit_code"] != nil {
				t.Fatalf("recorded %v", sr)
			}
			// doctor agrees: the selected tier is not usable, exit 1.
			if code, _, errOut := runCLI(t, env, "", "sandbox", "doctor"); code != ExitDenied || !strings.Contains(errOut, tc.want) {
				t.Fatalf("doctor: exit %d %s", code, errOut)
			}
		})
	}
}

func TestContainerConfigurationErrors(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"ECTO_DOCKER_EXTRA_ARGS", "--privileged", `"--privileged": not an accepted flag`},
		{"ECTO_DOCKER_EXTRA_ARGS", "--security-opt seccomp=unconfined", "IronVise applies its own seccomp profile"},
		{"ECTO_DOCKER_EXTRA_ARGS", "--label $(id)", "ECTO_DOCKER_EXTRA_ARGS"},
		{"ECTO_DOCKER_MEMORY", "lots", "ECTO_DOCKER_MEMORY"},
		{"ECTO_FC_VCPUS", "64", "ECTO_FC_VCPUS"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			env := cliEnv(t, "ECTO_DOCKER_IMAGE", "alpine:3.19", tc.name, tc.value)
			code, _, errOut := runCLI(t, env, "", "exec", "--workspace", t.TempDir(), "--", "true")
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d %s; want %d and %q", code, errOut, ExitUsage, tc.want)
			}
		})
	}
}

// TestSandboxDoctorPodman probes the container tier from inside real
// containers.
func TestSandboxDoctorPodman(t *testing.T) {
	img := podmanImage(t)
	env := cliEnv(t, "ECTO_DOCKER_IMAGE", img, "ECTO_DOCKER_RUNTIME", "podman")
	code, out, errOut := runCLI(t, env, "", "sandbox", "doctor", "--json")
	if code != 0 {
		t.Fatalf("exit %d %s %s", code, out, errOut)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	sel := rep.Tiers[0]
	if rep.Selected != "podman" || !rep.Usable || sel.Enforced == nil || sel.Enforced.Runtime != "podman" || sel.Enforced.Image != img {
		t.Fatalf("report %+v", sel)
	}
	states := map[string]string{}
	for _, g := range sel.Guarantees {
		states[g.Name] = string(g.State)
	}
	for _, g := range []string{"fs_workspace_readonly", "fs_outside_write_denied", "fs_outside_read_denied", "signals_scoped",
		"limit_cpu", "limit_memory", "limit_processes", "caps_dropped", "no_new_privs", "no_survivors"} {
		if states[g] != "enforced" {
			t.Errorf("%s: %s", g, states[g])
		}
	}
	code, out, _ = runCLI(t, env, "", "sandbox", "doctor")
	if code != 0 || !strings.Contains(out, "selected tier: podman (usable)") || !strings.Contains(out, "image "+img+" (sha256:") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
