package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionFieldsBound is issue 23 item 1: every session field a report
// or certificate shows is bound to the signed events. The attacker edits
// the SQLite file with the sessions trigger dropped; verify-session fails
// naming the check, and report and certificate export refuse (exit 2,
// naming the check, nothing written) instead of signing the false values.
func TestSessionFieldsBound(t *testing.T) {
	tests := []struct {
		name, stmt, check string
		seq               int64
		reason            string
	}{
		{"finished_at", `UPDATE sessions SET finished_at = finished_at - 86400000000 WHERE id = ?`, "seal", 9, "finished_at"},
		{"sealed_at", `UPDATE sessions SET sealed_at = sealed_at + 86400000000 WHERE id = ?`, "seal", 9, "sealed_at"},
		{"status", `UPDATE sessions SET status = 'failed' WHERE id = ?`, "seal", 9, "status"},
		{"created_at", `UPDATE sessions SET created_at = created_at - 86400000000 WHERE id = ?`, "goal", 0, "created_at"},
		// An exec session claiming to be an agent session.
		{"agent_loop", `UPDATE sessions SET agent_loop = 1 WHERE id = ?`, "goal", 0, "agent_loop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// rotatedLedger dropped the triggers, sessions_bound among them
			// (the trigger itself is tested by ledgertest's AppendOnly).
			e, id, _, db := rotatedLedger(t, true)
			if _, err := db.Exec(tc.stmt, id[:]); err != nil {
				t.Fatal(err)
			}
			verifyFailure(t, e, id, tc.check, tc.seq, tc.reason)
			dir := t.TempDir()
			for _, format := range []string{"certificate", "json", "html"} {
				out := filepath.Join(dir, "out."+format)
				code, _, errOut := e.run("report", id.String(), "--format", format, "--output", out)
				if code != 2 || !strings.Contains(errOut, "failed the "+tc.check+" check") || !strings.Contains(errOut, "nothing was exported") {
					t.Errorf("report --format %s: exit %d %q; want 2 naming the %s check", format, code, errOut, tc.check)
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("report --format %s wrote %s for a session that fails verification", format, out)
				}
			}
		})
	}
}
