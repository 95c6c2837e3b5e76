package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHookStartFailures: a hook opens the ledger beside loading its rules,
// as a standalone exec does. Each failure still blocks the call with the
// reason it always gave — the rules' first when both fail — and the ledger
// opened beside a failed rules load is closed: its SQLite connection took
// its WAL with it.
func TestHookStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		badPolicy bool
		badLedger bool
		want      string
	}{
		{"a policy that does not exist", true, false, "no-such-policy"},
		{"a ledger that cannot open", false, true, "open the ledger"},
		{"both", true, true, "no-such-policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := cliEnv(t, "GUARD_REQUIRED", "false")
			data := env["ECTO_DATA_DIR"]
			if tc.badLedger {
				if err := os.MkdirAll(filepath.Join(data, "ledger.db"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			ws, _ := filepath.EvalSymlinks(t.TempDir())
			ev, _ := json.Marshal(map[string]any{
				"session_id": "start-failures", "cwd": ws, "hook_event_name": "PreToolUse",
				"tool_name": "Bash", "tool_input": map[string]string{"command": "ls"},
			})
			args := []string{"hook", "claude-code"}
			if tc.badPolicy {
				args = append(args, "--policy", "no-such-policy")
			}
			code, out, errOut := runCLI(t, env, string(ev), args...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want a block (exit 2) naming %q", code, out, errOut, tc.want)
			}
			if tc.badPolicy && strings.Contains(errOut, "open the ledger") {
				t.Fatalf("the ledger's error came before the rules': %q", errOut)
			}
			if !tc.badLedger {
				if _, err := os.Stat(filepath.Join(data, "ledger.db")); err != nil {
					t.Fatalf("the ledger was not opened beside the rules: %v", err)
				}
			}
			// Checked again a little later: a ledger left opening on its
			// own would only then have made its WAL.
			for _, wait := range []time.Duration{0, 300 * time.Millisecond} {
				time.Sleep(wait)
				if _, err := os.Stat(filepath.Join(data, "ledger.db-wal")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the ledger's WAL is there %s after the hook returned (%v): the ledger opened beside the rules was not closed", wait, err)
				}
			}
		})
	}
}
