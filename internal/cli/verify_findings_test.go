package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestVerifySessionChecksFindings is issue 13 item 1 for verify-session: a
// chain whose complete action cites an observation that names no executed
// action (what a client's own observation looks like) is signed and
// unbroken, yet its findings prove nothing: verify-session fails the
// findings check and exits 1.
func TestVerifySessionChecksFindings(t *testing.T) {
	dir, l := newDirLedger(t)
	ctx := context.Background()
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "audit the ssh settings"})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := l.Append(ctx, s.ID, ledger.TypeObservation, map[string]any{"content": "root password is hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	finding := map[string]any{"severity": "critical", "title": "root password", "evidence": "e", "recommendation": "r",
		"evidence_sequence": []uint64{obs.Seq}, "evidence_quotes": []string{"hunter2"}}
	if _, err := l.Append(ctx, s.ID, ledger.TypeAction, map[string]any{"step": 1, "intent_seq": 1, "name": "complete", "params": map[string]any{"findings": []any{finding}}}); err != nil {
		t.Fatal(err)
	}
	l.EndSession(ctx, s.ID, ledger.StatusCompleted)
	if _, err := l.Seal(ctx, s.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e := &ledgerEnv{dir: dir, env: map[string]string{"ECTO_DATA_DIR": dir, "HOME": dir}}
	code, out, _ := e.run("verify-session", s.ID.String())
	if code != 1 || !strings.Contains(out, "findings check") || !strings.Contains(out, "names no earlier action") {
		t.Fatalf("forged findings: exit %d; want 1 with the findings check failing\n%s", code, out)
	}
	code, out, _ = e.run("verify-session", s.ID.String(), "--json")
	var res map[string]any
	if code != 1 || json.Unmarshal([]byte(out), &res) != nil || res["ok"] != false || res["findings_ok"] != false || res["chain_ok"] != true {
		t.Fatalf("--json: exit %d\n%s", code, out)
	}
}
