package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// runSandboxCLI runs the command line in-process with env.
func runSandboxCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	env["HOME"] = t.TempDir()
	env["ECTO_DATA_DIR"] = t.TempDir()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"ironvise"}, args...), strings.NewReader(""), &out, &errb, config.MapLookup(env))
	return code, out.String(), errb.String()
}

// The native tier re-executes the binary, which a test binary cannot do
// through run(); the native package tests doctor against the real kernel.
// These cover the command's selection, output and exit codes.
func TestSandboxDoctorUnusableTierExitsNonZeroNamingTheFix(t *testing.T) {
	code, out, errOut := runSandboxCLI(t, map[string]string{"ECTO_SANDBOX_TIER": "docker"}, "sandbox", "doctor")
	if code != ExitDenied {
		t.Fatalf("exit %d; want %d\n%s%s", code, ExitDenied, out, errOut)
	}
	// docker or podman, whichever auto finds; unusable without an image.
	if !strings.Contains(out, " (NOT USABLE") || !strings.Contains(errOut, "ECTO_DOCKER_IMAGE is not set; fix: set ECTO_DOCKER_IMAGE") ||
		!(strings.HasPrefix(out, "selected tier: docker") || strings.HasPrefix(out, "selected tier: podman")) {
		t.Fatalf("stdout %q\nstderr %q", out, errOut)
	}
	if !strings.Contains(out, "other tiers:\n  native-linux") && !strings.Contains(out, "other tiers:\n  native-") {
		t.Fatalf("the other tiers are not listed: %s", out)
	}
	// --tier probes that tier only.
	code, out, _ = runSandboxCLI(t, map[string]string{}, "sandbox", "doctor", "--tier", "firecracker")
	if code != ExitDenied || !strings.Contains(out, "selected tier: firecracker (NOT USABLE") || !strings.Contains(out, "ECTO_FC_BINARY is not set") || strings.Contains(out, "other tiers") {
		t.Fatalf("--tier firecracker: exit %d\n%s", code, out)
	}
}

func TestSandboxDoctorJSON(t *testing.T) {
	code, out, _ := runSandboxCLI(t, map[string]string{"ECTO_DOCKER_IMAGE": "alpine:3.19"}, "sandbox", "doctor", "--json")
	if code != ExitDenied {
		t.Fatalf("exit %d", code)
	}
	var rep struct {
		Selected string `json:"selected"`
		Usable   bool   `json:"usable"`
		Tiers    []struct {
			Tier      string `json:"tier"`
			Available bool   `json:"available"`
			Problem   string `json:"problem"`
		} `json:"tiers"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// alpine:3.19 is not on this host, or there is no runtime at all:
	// either way the container tier is unusable and says why.
	if len(rep.Tiers) == 0 {
		t.Fatalf("no tiers: %s", out)
	}
	p := rep.Tiers[0].Problem
	if (rep.Selected != "docker" && rep.Selected != "podman") || rep.Usable || rep.Tiers[0].Available ||
		!(strings.Contains(p, `image "alpine:3.19" is not present locally`) || strings.Contains(p, "is not installed")) {
		t.Fatalf("%+v", rep)
	}
}

func TestSandboxDoctorPermissive(t *testing.T) {
	code, out, _ := runSandboxCLI(t, map[string]string{"ECTO_SANDBOX_PERMISSIVE": "true"}, "sandbox", "doctor")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "selected tier: none") || !strings.Contains(out, "WITHOUT OS confinement") || strings.Count(out, "not_enforced") != len(sandbox.GuaranteeNames()) {
		t.Fatalf("%s", out)
	}
}

func TestSandboxDoctorRejectsBadInput(t *testing.T) {
	if code, _, errOut := runSandboxCLI(t, map[string]string{}, "sandbox", "doctor", "--tier", "vm"); code != ExitUsage || !strings.Contains(errOut, "accepted: native, docker, firecracker") {
		t.Fatalf("--tier vm: exit %d %s", code, errOut)
	}
	if code, _, errOut := runSandboxCLI(t, map[string]string{"ECTO_SANDBOX_MEM_MIB": "lots"}, "sandbox", "doctor"); code != ExitUsage || !strings.Contains(errOut, "ECTO_SANDBOX_MEM_MIB") {
		t.Fatalf("bad ECTO_SANDBOX_MEM_MIB: exit %d %s", code, errOut)
	}
	if code, _, errOut := runSandboxCLI(t, map[string]string{"ECTO_SANDBOX_USER": "no-such-user-ironvise"}, "sandbox", "doctor"); code != ExitUsage || !strings.Contains(errOut, "ECTO_SANDBOX_USER") {
		t.Fatalf("unknown user: exit %d %s", code, errOut)
	}
}
