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

// straceOrSkip is strace's path; without it the test skips, or fails in
// CI, whose .ci/run installs it.
func straceOrSkip(t *testing.T) string {
	t.Helper()
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
	return strace
}

// checkSyncBudget runs bin with args under strace four times, in ws with
// env and stdin, and fails the test when a run makes no fsync at all or
// more than most.
func checkSyncBudget(t *testing.T, strace, bin, ws string, env map[string]string, stdin string, most int, args ...string) {
	t.Helper()
	for run := range 4 {
		trace := filepath.Join(t.TempDir(), "strace")
		cmd := exec.Command(strace, append([]string{"-f", "-qq", "-y", "-o", trace, "-e", "trace=fsync,fdatasync,syncfs,sync,msync,sync_file_range", bin}, args...)...)
		cmd.Dir, cmd.Env, cmd.Stdin = ws, envList(env), strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, out)
		}
		b, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		calls := syncCall.FindAllString(string(b), -1)
		if len(calls) == 0 {
			t.Fatalf("run %d: strace saw no fsync at all; nothing was made durable or strace traced nothing:\n%s", run, b)
		}
		if len(calls) > most {
			t.Errorf("run %d: %d fsyncs; want at most %d:\n%s", run, len(calls), most, strings.Join(calls, "\n"))
		}
	}
}

// budgetEnv is a fresh data directory and home, the system's PATH and no
// guard: what a counted run needs and nothing that would write more.
func budgetEnv(t *testing.T) map[string]string {
	return map[string]string{"ECTO_DATA_DIR": t.TempDir(), "HOME": t.TempDir(), "PATH": "/usr/local/bin:/usr/bin:/bin", "GUARD_REQUIRED": "false"}
}

// TestStandaloneExecFsyncBudget: a standalone exec (no daemon) makes at
// most three fsyncs, counted by strace over the process and its sandbox:
// the two commits' WAL syncs and the WAL's directory, which SQLite syncs on
// every process's first commit. The remembered checkpoint is written
// without one (ledger.Options.CheckpointFileUnsynced); with its fsync each
// run made four. The first run, which creates the keys and the database,
// is not counted.
func TestStandaloneExecFsyncBudget(t *testing.T) {
	strace := straceOrSkip(t)
	bin := buildIronvise(t)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	env := budgetEnv(t)
	args := []string{"exec", "--no-daemon", "--workspace", ws, "--", "true"}
	if r := runBin(t, bin, ws, env, args...); r.code != 0 {
		t.Fatalf("first exec: exit %d: %s", r.code, r.stderr)
	}
	checkSyncBudget(t, strace, bin, ws, env, "", 3, args...)
}

// TestHookEventFsyncBudget: a hook event of an agent session that is
// already recorded makes at most three fsyncs (here: the WAL's directory,
// which SQLite syncs on a process's first commit, and the WAL on each of
// the event's two commits). Renewing the session's day-long lease wrote,
// and synced, one more transaction on every event; it is now written only
// once less than half of the lease is left (ledger.RenewLeasesIfDue). The
// first event, which creates the keys, the database and the session, is
// not counted.
func TestHookEventFsyncBudget(t *testing.T) {
	strace := straceOrSkip(t)
	bin := buildIronvise(t)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	env := budgetEnv(t)
	event := `{"session_id":"fsync-budget","cwd":"` + ws + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`
	cmd := exec.Command(bin, "hook", "claude-code")
	cmd.Dir, cmd.Env, cmd.Stdin = ws, envList(env), strings.NewReader(event)
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "{}" {
		t.Fatalf("first event: %v: %s", err, out)
	}
	checkSyncBudget(t, strace, bin, ws, env, event, 3, "hook", "claude-code")
}
