package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	_ "modernc.org/sqlite"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// rotatedLedger is a data dir whose SQLite ledger holds one session with a
// key rotation, all of it covered by a checkpoint: seqs 0 genesis, 1
// prompt, 2..5 observations, 6 key_rotation, 7..8 observations (9 the
// seal when sealed).
func rotatedLedger(t *testing.T, sealed bool) (*ledgerEnv, uuid.UUID, []ledger.Event, *sql.DB) {
	t.Helper()
	dir, l := newDirLedger(t)
	ctx := context.Background()
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "rotate and verify"})
	if err != nil {
		t.Fatal(err)
	}
	add := func(n int) {
		for i := range n {
			if _, err := l.Append(ctx, s.ID, ledger.TypeObservation, map[string]any{"content": fmt.Sprintf("out %d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(4)
	if _, err := l.RotateKey(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	add(2)
	if sealed {
		if _, err := l.Seal(ctx, s.ID, "cli-test"); err != nil {
			t.Fatal(err)
		}
	}
	// Another session after it, so its leaves are not the log's last.
	o, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "bystander"})
	if err != nil {
		t.Fatal(err)
	}
	l.Append(ctx, o.ID, ledger.TypeObservation, map[string]any{"content": "x"})
	if _, err := l.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := l.Events(ctx, s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e := &ledgerEnv{dir: dir, env: map[string]string{"ECTO_DATA_DIR": dir, "HOME": dir}}
	if code, out, errs := e.run("verify-session", s.ID.String()); code != 0 {
		t.Fatalf("untampered session: exit %d\n%s%s", code, out, errs)
	}
	// The attacker has the file: the append-only triggers go first.
	db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, tr := range []string{"events_no_update", "events_no_delete", "keys_no_update", "keys_no_delete", "sessions_bound"} {
		if _, err := db.Exec("DROP TRIGGER " + tr); err != nil {
			t.Fatal(err)
		}
	}
	return e, s.ID, evs, db
}

// verifyFailure runs verify-session in text and JSON form and checks that
// both name the check, the first broken seq and a reason containing
// reason, with exit status 1.
func verifyFailure(t *testing.T, e *ledgerEnv, id uuid.UUID, check string, seq int64, reason string) {
	t.Helper()
	code, out, errs := e.run("verify-session", id.String())
	if code != 1 {
		t.Fatalf("exit %d; want 1\n%s%s", code, out, errs)
	}
	line := fmt.Sprintf("  %-11s FAIL at seq %d: ", check, seq)
	summary := fmt.Sprintf("verification FAILED: %s check, first broken seq %d: ", check, seq)
	if !strings.Contains(out, line) || !strings.Contains(out, summary) {
		t.Fatalf("output lacks %q and %q:\n%s", line, summary, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, line) && !strings.Contains(l, reason) {
			t.Fatalf("reason %q; want it to say %q", l, reason)
		}
	}
	code, out, _ = e.run("verify-session", id.String(), "--json")
	var res struct {
		OK        bool
		SessionID string `json:"session_id"`
		Error     struct {
			Kind     string
			Code     int
			Message  string
			Check    string
			Sequence *int64
			Problem  string
		}
		Checks map[string]ledger.Check
	}
	if code != 1 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("--json: exit %d\n%s", code, out)
	}
	if res.OK || res.Error.Check != check || res.Error.Sequence == nil || *res.Error.Sequence != seq || !strings.Contains(res.Error.Problem, reason) {
		t.Fatalf("--json error = %+v; want the %s check at seq %d saying %q", res.Error, check, seq, reason)
	}
	// The fields every --json error object has (docs/cli.md#json-output).
	if res.SessionID != id.String() || res.Error.Kind != "verification" || res.Error.Code != 1 ||
		!strings.HasPrefix(res.Error.Message, fmt.Sprintf("%s check failed at seq %d: ", check, seq)) {
		t.Fatalf("--json: session %s, error %+v; want kind verification, code 1 and a message naming the check", res.SessionID, res.Error)
	}
	if c := res.Checks[check]; c.OK || c.Seq != seq {
		t.Fatalf("--json checks.%s = %+v", check, c)
	}
}

func TestVerifySessionRotationByWrongKey(t *testing.T) {
	tests := []struct {
		name string
		// claimOldKey: the forged rotation names the key it replaces as
		// its signer (it cannot sign with it); otherwise it names the
		// attacker's own key.
		claimOldKey bool
		reason      string
	}{
		{"forged rotation names the attacker's key", false, "but key "},
		{"forged rotation claims the previous key", true, "key rotation signature (must be by the previous key) does not verify"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, id, evs, db := rotatedLedger(t, false)
			// A rewrite from the rotation on by someone without the
			// session key: the chain links, the key table agrees with the
			// forged rotation, only the signatures (and the log) tell.
			ledgertest.ForgeRotation(id, evs, tc.claimOldKey, func(query string, args ...any) {
				if _, err := db.Exec(query, args...); err != nil {
					t.Fatal(err)
				}
			})
			verifyFailure(t, e, id, "signatures", 6, tc.reason)
		})
	}
}

func TestVerifySessionTailTruncatedAfterCheckpoint(t *testing.T) {
	tests := []struct {
		name   string
		sealed bool
		// unseal also clears the seal from the session row, so only the
		// log can tell that events were there.
		unseal bool
	}{
		{"running session", false, false},
		{"sealed session, seal deleted too", true, false},
		{"sealed session, row unsealed", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, id, _, db := rotatedLedger(t, tc.sealed)
			if _, err := db.Exec(`DELETE FROM events WHERE session_id = ? AND seq >= 7`, id[:]); err != nil {
				t.Fatal(err)
			}
			if tc.unseal {
				if _, err := db.Exec(`UPDATE sessions SET status = 'running', finished_at = NULL, sealed_at = NULL WHERE id = ?`, id[:]); err != nil {
					t.Fatal(err)
				}
			}
			verifyFailure(t, e, id, "log", 7, "but its event is gone: events were deleted")
			_, out, _ := e.run("verify-session", id.String())
			for _, c := range []string{"chain", "signatures", "goal"} {
				if !strings.Contains(out, fmt.Sprintf("  %-11s ok", c)) {
					t.Errorf("the %s check should pass on the remaining chain:\n%s", c, out)
				}
			}
			if seal := fmt.Sprintf("  %-11s FAIL at seq 7: ", "seal"); tc.sealed && !tc.unseal && !strings.Contains(out, seal) {
				t.Errorf("a sealed row without its seal event: want %q\n%s", seal, out)
			}
		})
	}
}
