//go:build linux

package cli

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// tamperTip appends a byte to the stored payload of the newest event of
// session id, with the trigger that forbids it dropped first, as an
// attacker with the database file could.
func tamperTip(t *testing.T, dataDir string, id uuid.UUID) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dataDir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DROP TRIGGER IF EXISTS events_no_update`); err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(`UPDATE events SET payload = CAST(CAST(payload AS TEXT) || ' ' AS BLOB) WHERE session_id = ? AND seq = (SELECT max(seq) FROM events WHERE session_id = ?)`, id[:], id[:])
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tampered %d events of %s", n, id)
	}
}

// TestOneShotStartupChecksOwnSessions: a standalone exec or a hook event
// checks, before it records, the log's tail, the instance chain and the
// running sessions of its own owner id, not every running session
// (ledger.VerifyStartupOwned): each of those cost every tool call a
// quarter of a millisecond. A tampered session of another owner no longer
// stops it; a tampered instance chain, or a tampered session of its own,
// still does.
func TestOneShotStartupChecksOwnSessions(t *testing.T) {
	e := newLedgerEnv(t) // e.open: a running session of another process
	env := e.env
	env["GUARD_REQUIRED"] = "false"
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	hookEvent := `{"session_id":"owned","cwd":"` + ws + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`
	hook := func() (int, string, string) { return runCLI(t, env, hookEvent, "hook", "claude-code") }
	exec := func() (int, string, string) {
		return runCLI(t, env, "", "exec", "--no-daemon", "--workspace", ws, "--", "true")
	}
	if code, out, errOut := hook(); code != 0 || strings.TrimSpace(out) != "{}" {
		t.Fatalf("first hook event: exit %d %q %q", code, out, errOut)
	}

	tamperTip(t, e.dir, e.open)
	if code, _, errOut := exec(); code != 0 {
		t.Fatalf("exec with another owner's session tampered: exit %d: %s", code, errOut)
	}
	if code, out, errOut := hook(); code != 0 || strings.TrimSpace(out) != "{}" {
		t.Fatalf("hook with another owner's session tampered: exit %d %q %q", code, out, errOut)
	}
	// serve and verify-session still see it.
	if code, out, _ := e.run("verify-session", e.open.String()); code != 1 || !strings.Contains(out, "first broken seq") {
		t.Fatalf("verify-session of the tampered session: exit %d\n%s", code, out)
	}

	// The hook's own session, tampered: the next event blocks.
	db, err := sql.Open("sqlite", filepath.Join(e.dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	err = db.QueryRow(`SELECT id FROM sessions WHERE goal = 'Claude Code session owned'`).Scan(&raw)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	own, err := uuid.FromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	tamperTip(t, e.dir, own)
	if code, _, errOut := hook(); code != 2 || !strings.Contains(errOut, "startup verification failed") || !strings.Contains(errOut, own.String()) {
		t.Fatalf("hook with its own session tampered: exit %d %q; want a block naming %s", code, errOut, own)
	}

	// The instance chain, tampered: exec refuses.
	tamperTip(t, e.dir, ledger.InstanceSessionID)
	if code, _, errOut := exec(); code != ExitUsage || !strings.Contains(errOut, "startup verification failed") {
		t.Fatalf("exec with the instance chain tampered: exit %d: %s", code, errOut)
	}
}
