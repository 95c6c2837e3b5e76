package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBuildEmbedsTheLauncher builds ironvise as `make build` does
// (scripts/build-ironvise.sh) and checks, on the binary itself, that it
// embeds the launcher program built from this tree, that two builds are
// identical, and that the doctor's probes run through the embedded
// launcher. (A plain `go build` embeds none: package launcherbin's
// TestNotEmbedded.)
func TestBuildEmbedsTheLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the launcher is embedded on Linux only")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build with")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := append(os.Environ(), "CGO_ENABLED=0")
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	buildWithScript(t, root, a, "")
	buildWithScript(t, root, b, "")
	if sa, sb := fileSHA(t, a), fileSHA(t, b); sa != sb {
		t.Errorf("two builds of one tree differ: %s and %s", sa, sb)
	}

	// The launcher as the script builds it, on its own.
	lp := filepath.Join(dir, "launcher")
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags", "-s -w", "-o", lp, "./internal/sandbox/native/launcherbin/launcher")
	cmd.Dir, cmd.Env = root, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build the launcher: %v\n%s", err, out)
	}
	want := fileSHA(t, lp)
	if got := versionLauncher(t, a); got != want {
		t.Fatalf("version reports the embedded launcher %q; the launcher built from this tree is %s", got, want)
	}

	data := t.TempDir()
	doctor := exec.Command(a, "sandbox", "doctor")
	doctor.Env = append(os.Environ(), "ECTO_DATA_DIR="+data)
	doctor.Dir = t.TempDir()
	out, err := doctor.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not usable") || strings.Contains(string(out), "unusable") {
			t.Skipf("the native tier cannot run here:\n%s", out)
		}
		t.Fatalf("sandbox doctor: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "launcher: the launcher program embedded in this binary") || !strings.Contains(string(out), want) {
		t.Fatalf("sandbox doctor did not run through the embedded launcher %s:\n%s", want, out)
	}

	// A standalone exec, a process of one command, starts its launcher
	// from the embedded program too: while its command runs, the process
	// holds the program's sealed memory file.
	exe := exec.Command(a, "exec", "--no-daemon", "--", "sleep 2")
	exe.Env = append(os.Environ(), "ECTO_DATA_DIR="+data)
	exe.Dir = t.TempDir()
	var stderr strings.Builder
	exe.Stderr = &stderr
	if err := exe.Start(); err != nil {
		t.Fatal(err)
	}
	held := false
	for deadline := time.Now().Add(2 * time.Second); !held && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", exe.Process.Pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "/memfd:ironvise-launcher") {
				held = true
			}
		}
	}
	if err := exe.Wait(); err != nil {
		t.Fatalf("exec --no-daemon: %v\n%s", err, stderr.String())
	}
	if !held {
		t.Fatalf("a standalone exec did not make the embedded launcher executable (no memory file among its descriptors); stderr:\n%s", stderr.String())
	}
}

// buildWithScript builds ironvise into out with scripts/build-ironvise.sh,
// as make build does, with the build tags tags.
func buildWithScript(t *testing.T, root, out, tags string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "scripts", "build-ironvise.sh"), out)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "TAGS="+tags)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build-ironvise.sh (TAGS=%q): %v\n%s", tags, err, b)
	}
}

// versionLauncher is the embedded launcher's SHA-256 that bin's
// `version --json` reports.
func versionLauncher(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("%s version --json: %v", bin, err)
	}
	var v struct {
		Launcher *string `json:"embedded_launcher_sha256"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Launcher == nil {
		t.Fatalf("%s version --json: %v\n%s", bin, err, out)
	}
	return *v.Launcher
}

func fileSHA(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
