package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	_ "modernc.org/sqlite"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
)

// ledgerEnv is a data dir with a real SQLite ledger holding a few sessions.
type ledgerEnv struct {
	dir    string
	env    map[string]string
	sealed uuid.UUID
	open   uuid.UUID
}

// newDirLedger opens the SQLite ledger of a fresh data directory, with no
// timed checkpoints; the caller closes it before a command opens it.
func newDirLedger(t *testing.T) (string, *ledger.Ledger) {
	t.Helper()
	dir := t.TempDir()
	l, err := ledgerdb.Open(context.Background(), "", 0, ledger.Options{DataDir: dir, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return dir, l
}

func newLedgerEnv(t *testing.T) *ledgerEnv {
	t.Helper()
	dir, l := newDirLedger(t)
	ctx := context.Background()
	e := &ledgerEnv{dir: dir, env: map[string]string{"ECTO_DATA_DIR": dir, "HOME": dir}}
	s1, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "audit the web server", LLMBackend: "mock", LLMModel: "mock-v1"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		l.Append(ctx, s1.ID, ledger.TypeObservation, map[string]any{"content": "ok"})
	}
	l.EndSession(ctx, s1.ID, ledger.StatusAborted)
	if _, err := l.Seal(ctx, s1.ID, "cli-test"); err != nil {
		t.Fatal(err)
	}
	s2, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "still running"})
	if err != nil {
		t.Fatal(err)
	}
	e.sealed, e.open = s1.ID, s2.ID
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *ledgerEnv) run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"ironvise"}, args...), strings.NewReader(""), &out, &errb, config.MapLookup(e.env))
	return code, out.String(), errb.String()
}

func TestSessionsCommand(t *testing.T) {
	e := newLedgerEnv(t)
	code, out, errs := e.run("sessions")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, e.sealed.String()) || !strings.Contains(out, e.open.String()) || !strings.Contains(out, "aborted") {
		t.Fatalf("table lacks the sessions:\n%s", out)
	}
	if strings.Contains(out, uuid.Nil.String()) {
		t.Fatal("the instance session is listed")
	}
	// Newest first.
	if strings.Index(out, e.open.String()) > strings.Index(out, e.sealed.String()) {
		t.Fatalf("not newest first:\n%s", out)
	}
	code, out, _ = e.run("sessions", "--json", "--status", "aborted")
	var rows []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 {
		t.Fatalf("--json --status aborted: exit %d, %s", code, out)
	}
	if rows[0]["id"] != e.sealed.String() || rows[0]["sealed"] != true || rows[0]["event_count"] != float64(6) || rows[0]["llm_backend"] != "mock" {
		t.Fatalf("row %v", rows[0])
	}
	if code, out, _ = e.run("sessions", "--limit", "1", "--json"); code != 0 || strings.Count(out, `"id"`) != 1 {
		t.Fatalf("--limit 1: exit %d, %s", code, out)
	}
	for _, args := range [][]string{{"sessions", "--status", "sealed"}, {"sessions", "--limit", "0"}, {"sessions", "extra"}} {
		if code, _, errs := e.run(args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d; want 2 with a message", args, code)
		}
	}
	bad := map[string]string{"ECTO_DATA_DIR": e.dir, "DATABASE_URL": "mysql://x"}
	var out2, err2 bytes.Buffer
	if code := run(context.Background(), []string{"ironvise", "sessions"}, strings.NewReader(""), &out2, &err2, config.MapLookup(bad)); code != 2 || !strings.Contains(err2.String(), "DATABASE_URL") {
		t.Fatalf("bad DATABASE_URL: exit %d, %s", code, err2.String())
	}
}

func TestVerifySessionCommand(t *testing.T) {
	e := newLedgerEnv(t)
	for _, id := range []uuid.UUID{e.sealed, e.open, uuid.Nil} {
		code, out, errs := e.run("verify-session", id.String())
		if code != 0 || !strings.Contains(out, "verification passed") {
			t.Fatalf("verify %s: exit %d\n%s%s", id, code, out, errs)
		}
	}
	code, out, _ := e.run("verify-session", e.sealed.String(), "--json")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["ok"] != true || res["error"] != nil || res["seal_ok"] != true || res["sealed"] != true {
		t.Fatalf("--json: exit %d, %s", code, out)
	}
	// Usage errors and unknown sessions: exit 2.
	for _, args := range [][]string{{"verify-session"}, {"verify-session", "not-a-uuid"}, {"verify-session", uuid.NewString()}} {
		if code, _, errs := e.run(args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d; want 2 with a message", args, code)
		}
	}
	// Tamper: a changed payload byte and a changed goal. The triggers are
	// dropped first, as an attacker with the file could.
	db, err := sql.Open("sqlite", filepath.Join(e.dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`DROP TRIGGER events_no_update`,
		`DROP TRIGGER sessions_bound`,
		`UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT), '"ok"', '"OK"') AS BLOB) WHERE session_id = ? AND seq = 3`,
	} {
		args := []any{}
		if strings.Contains(q, "?") {
			args = append(args, e.sealed[:])
		}
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	code, out, _ = e.run("verify-session", e.sealed.String())
	if code != 1 || !strings.Contains(out, "chain check, first broken seq 3") {
		t.Fatalf("payload tamper: exit %d\n%s", code, out)
	}
	if _, err := db.Exec(`UPDATE sessions SET goal = 'something else' WHERE id = ?`, e.open[:]); err != nil {
		t.Fatal(err)
	}
	code, out, _ = e.run("verify-session", e.open.String(), "--json")
	json.Unmarshal([]byte(out), &res)
	if code != 1 || res["ok"] != false || res["goal_ok"] != false {
		t.Fatalf("goal tamper: exit %d\n%s", code, out)
	}
	if ev, _ := res["error"].(map[string]any); ev["check"] != "goal" || ev["sequence"] != float64(0) {
		t.Fatalf("error %v; want the goal check at seq 0", res["error"])
	}
}

func TestLedgerCommandsHelp(t *testing.T) {
	e := &ledgerEnv{env: map[string]string{"HOME": t.TempDir()}}
	for _, c := range []string{"sessions", "verify-session"} {
		code, out, _ := e.run(c, "--help")
		if code != 0 || !strings.Contains(out, "Examples:") {
			t.Errorf("%s --help: exit %d, no examples:\n%s", c, code, out)
		}
	}
}
