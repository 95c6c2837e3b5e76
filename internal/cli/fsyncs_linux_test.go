//go:build linux

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// syncCall is a line of strace's output that starts a call making data
// durable (one per call: a call strace shows as unfinished is resumed on
// another line, which does not match).
var syncCall = regexp.MustCompile(`(?m)^[0-9]+ +(fsync|fdatasync|syncfs|sync|msync|sync_file_range)\(.*$`)

// TestStandaloneExecFsyncBudget: a standalone exec (no daemon) makes at
// most three fsyncs, counted by strace over the process and its sandbox:
// the two commits' WAL syncs and the WAL's directory, which SQLite syncs on
// every process's first commit. The remembered checkpoint is written
// without one (ledger.Options.CheckpointFileUnsynced); with its fsync each
// run made four. The first run, which creates the keys and the database,
// is not counted.
func TestStandaloneExecFsyncBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("strace is not installed; .ci/run installs it")
		}
		t.Skip("counting fsyncs needs strace (.ci/run installs it; CI=true turns this skip into a failure)")
	}
	bin := buildIronvise(t)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	data := t.TempDir()
	env := map[string]string{"ECTO_DATA_DIR": data, "HOME": t.TempDir(), "PATH": "/usr/local/bin:/usr/bin:/bin", "GUARD_REQUIRED": "false"}
	args := []string{"exec", "--no-daemon", "--workspace", ws, "--", "true"}
	if r := runBin(t, bin, ws, env, args...); r.code != 0 {
		t.Fatalf("first exec: exit %d: %s", r.code, r.stderr)
	}
	for run := range 4 {
		trace := filepath.Join(t.TempDir(), "strace")
		cmd := exec.Command(strace, append([]string{"-f", "-qq", "-y", "-o", trace, "-e", "trace=fsync,fdatasync,syncfs,sync,msync,sync_file_range", bin}, args...)...)
		cmd.Dir, cmd.Env = ws, envList(env)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, out)
		}
		b, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		calls := syncCall.FindAllString(string(b), -1)
		if len(calls) == 0 {
			t.Fatalf("run %d: strace saw no fsync at all; the commits were not durable or strace traced nothing:\n%s", run, b)
		}
		if len(calls) > 3 {
			t.Errorf("run %d: %d fsyncs; want at most 3:\n%s", run, len(calls), strings.Join(calls, "\n"))
		}
	}
}
