//go:build linux

package native

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// podmanTestImage is the image the podman tests run
// (scripts/setup-podman.sh builds it).
func podmanTestImage() string {
	if img := os.Getenv("IRONVISE_TEST_PODMAN_IMAGE"); img != "" {
		return img
	}
	return "localhost/ironvise-busybox:latest"
}

// inPodman runs the static ironvise binary in a container of the test
// image with podman's default security options plus flags, and returns
// `sandbox doctor --json`'s report, stderr and exit error.
func inPodman(t *testing.T, bin string, flags ...string) ([]sandbox.TierReport, string, error) {
	t.Helper()
	img := podmanTestImage()
	args := append([]string{"run", "--rm", "-e", "HOME=/tmp", "-v", bin + ":/usr/local/bin/ironvise:ro"}, flags...)
	args = append(args, img, "/usr/local/bin/ironvise", "sandbox", "doctor", "--json")
	cmd := exec.Command("podman", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep struct {
		Tiers []sandbox.TierReport `json:"tiers"`
	}
	if jerr := json.Unmarshal(out, &rep); jerr != nil || len(rep.Tiers) == 0 {
		t.Fatalf("podman %v: %v: no report: %v\n%s\n%s", flags, err, jerr, out, stderr.String())
	}
	return rep.Tiers, stderr.String(), err
}

// staticBinary builds ironvise as the container runs it (static, outside
// /tmp, which may be mounted noexec). It skips when podman or the image is
// missing, unless IRONVISE_TEST_PODMAN=1.
func staticBinary(t *testing.T) string {
	t.Helper()
	img := podmanTestImage()
	miss := ""
	if _, err := exec.LookPath("podman"); err != nil {
		miss = "podman is not installed"
	} else if exec.Command("podman", "image", "exists", img).Run() != nil {
		miss = "image " + img + " is not present"
	}
	if miss != "" {
		if os.Getenv("IRONVISE_TEST_PODMAN") == "1" {
			t.Fatalf("%s (IRONVISE_TEST_PODMAN=1 requires it; run scripts/setup-podman.sh)", miss)
		}
		t.Skipf("%s: skipping the real-container test (run scripts/setup-podman.sh, or set IRONVISE_TEST_PODMAN=1 to make this a failure)", miss)
	}
	dir, err := os.MkdirTemp("/var/tmp", "ironvise-incontainer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "ironvise")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = "/usr/local/go/bin/go"
	}
	build := exec.Command(goTool, "build", "-o", bin, "github.com/ironvise/ironvise/cmd/ironvise")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build ironvise: %v\n%s", err, out)
	}
	return bin
}

// TestNativeTierInPodman: IronVise as root of a podman container (no
// CAP_SYS_ADMIN). With the default options the tier is unusable and says
// both fixes; with --security-opt unmask=ALL it builds its namespaces
// through a user namespace; in container mode it passes with the
// namespace-backed guarantees delegated.
func TestNativeTierInPodman(t *testing.T) {
	bin := staticBinary(t)
	states := func(r sandbox.TierReport) map[string]sandbox.State {
		m := map[string]sandbox.State{}
		for _, g := range r.Guarantees {
			m[g.Name] = g.State
		}
		return m
	}

	t.Run("default", func(t *testing.T) {
		tiers, _, err := inPodman(t, bin)
		if err == nil || tiers[0].Usable() || !strings.Contains(tiers[0].Problem, "unmask=ALL") || !strings.Contains(tiers[0].Problem, "ECTO_SANDBOX_CONTAINER_MODE=true") {
			t.Fatalf("default options: err %v, report %+v; want unusable naming both fixes", err, tiers[0])
		}
	})
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"unmask", []string{"--security-opt", "unmask=ALL"}},
		{"unmask_user", []string{"--security-opt", "unmask=ALL", "--user", "1000:1000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tiers, stderr, err := inPodman(t, bin, tc.flags...)
			r := tiers[0]
			if err != nil || !r.Usable() || r.Enforced == nil || r.Enforced.Isolation != sandbox.IsolationNamespaces {
				t.Fatalf("err %v, report %+v\n%s", err, r, stderr)
			}
			for name, st := range states(r) {
				// An overlay's upper directory cannot lie on the
				// container's own overlayfs root: overlay mode may be
				// refused there, never run on the real workspace.
				if st != sandbox.StateEnforced && (name != sandbox.GFSOverlayIsolated || st != sandbox.StateNotApplicable) {
					t.Errorf("%s: %s", name, st)
				}
			}
		})
	}
	t.Run("container_mode", func(t *testing.T) {
		tiers, stderr, err := inPodman(t, bin, "-e", "ECTO_SANDBOX_CONTAINER_MODE=true")
		r := tiers[0]
		if err != nil || !r.Usable() || r.Enforced == nil || r.Enforced.Isolation != sandbox.IsolationContainer {
			t.Fatalf("err %v, report %+v\n%s", err, r, stderr)
		}
		want := map[string]sandbox.State{sandbox.GNetNamespace: sandbox.StateDelegated, sandbox.GScratchCapped: sandbox.StateDelegated,
			sandbox.GLimitProcesses: sandbox.StateDelegated, sandbox.GNetProxyOnly: sandbox.StateNotApplicable,
			sandbox.GFSOverlayIsolated: sandbox.StateNotApplicable}
		for name, st := range states(r) {
			w, ok := want[name]
			if !ok {
				w = sandbox.StateEnforced
			}
			if st != w {
				t.Errorf("%s: %s; want %s", name, st, w)
			}
		}
	})
}
