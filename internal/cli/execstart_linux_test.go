//go:build linux

package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
)

// launcherChildren are the sandbox launchers this process started that
// are still running (or not yet reaped).
func launcherChildren(t *testing.T) []int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "children"))
		if err != nil {
			continue // the thread ended
		}
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			cmd, _ := os.ReadFile("/proc/" + f + "/cmdline")
			if strings.Contains(string(cmd), launch.Arg) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestStandaloneExecStartFailures: a standalone exec starts its sandbox
// tier (and the tier its launcher) once the protected paths are known, and
// opens the ledger beside the rest of its start-up. A run that fails after
// either started reports the failure the way it always did, and leaves no
// launcher running and no ledger open: the closed ledger's SQLite
// connection took its WAL with it.
func TestStandaloneExecStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the arguments before "--" after preparing env.
		setup func(t *testing.T, env map[string]string) []string
		want  string
	}{
		{"a policy that does not exist", func(t *testing.T, env map[string]string) []string {
			ws, _ := filepath.EvalSymlinks(t.TempDir())
			return []string{"--workspace", ws, "--policy", "no-such-policy"}
		}, "no-such-policy"},
		{"a workspace inside the data directory", func(t *testing.T, env map[string]string) []string {
			ws := filepath.Join(env["ECTO_DATA_DIR"], "inside")
			if err := os.MkdirAll(ws, 0o700); err != nil {
				t.Fatal(err)
			}
			return []string{"--workspace", ws}
		}, "workspace"},
		{"a ledger that cannot open", func(t *testing.T, env map[string]string) []string {
			if err := os.MkdirAll(filepath.Join(env["ECTO_DATA_DIR"], "ledger.db"), 0o700); err != nil {
				t.Fatal(err)
			}
			ws, _ := filepath.EvalSymlinks(t.TempDir())
			return []string{"--workspace", ws}
		}, "open the ledger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := cliEnv(t, "GUARD_REQUIRED", "false")
			args := append(append([]string{"exec", "--no-daemon"}, tc.setup(t, env)...), "--", "true")
			code, out, errOut := runCLI(t, env, "", args...)
			if code != ExitUsage || out != "" || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d naming %q", code, out, errOut, ExitUsage, tc.want)
			}
			// The tier's Close kills and reaps its launcher, a starting one
			// too, before exec returns.
			if left := launcherChildren(t); len(left) > 0 {
				t.Fatalf("launchers still running after the failed exec: %v", left)
			}
			if _, err := os.Stat(filepath.Join(env["ECTO_DATA_DIR"], "ledger.db-wal")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the ledger's WAL is still there (%v): the ledger opened beside the start-up was not closed", err)
			}
		})
	}
}
