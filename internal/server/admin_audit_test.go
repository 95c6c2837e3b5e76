package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
)

// adminChanges returns the admin_change payloads of the instance chain.
func (ts *testServer) adminChanges() []adminChangeEvent {
	ts.t.Helper()
	evs, err := ts.ledger().Events(context.Background(), ledger.InstanceSessionID, 0, 0)
	if err != nil {
		ts.t.Fatal(err)
	}
	var out []adminChangeEvent
	for _, ev := range evs {
		if ev.Type == ledger.TypeAdminChange {
			var p adminChangeEvent
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				ts.t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}

// errAuditDown is the failure injected into admin_change appends.
var errAuditDown = errors.New("test: the admin_change append fails")

// auditDownBackend fails every transaction that writes an admin_change
// event, after the transaction's other writes.
type auditDownBackend struct{ ledger.Backend }

func (b auditDownBackend) Update(ctx context.Context, fn func(ledger.WriteTx) error) error {
	return b.Backend.Update(ctx, func(tx ledger.WriteTx) error { return fn(auditDownTx{tx}) })
}

type auditDownTx struct{ ledger.WriteTx }

func (tx auditDownTx) Apply(ctx context.Context, c *ledger.Changes) error {
	for _, ev := range c.Events {
		if ev.Type == ledger.TypeAdminChange {
			return errAuditDown
		}
	}
	return tx.WriteTx.Apply(ctx, c)
}

// TestAdminChangesAudited: each of the nine administrative routes leaves
// exactly one admin_change event; when that event cannot be written, the
// change is not made — in the database (tokens, webhooks: one
// transaction) and on disk (policies, settings, tripwire: recorded before
// the file is put in place).
func TestAdminChangesAudited(t *testing.T) {
	dir := t.TempDir()
	dbURL := "sqlite:" + filepath.Join(dir, "ledger.db")
	ts := startServer(t, tsOptions{dataDir: dir, env: map[string]string{"DATABASE_URL": dbURL}})
	policy := "name = \"audited\"\nversion = \"1\"\nallowed_actions = [\"read_file\", \"complete\"]\n"
	policyPath := filepath.Join(dir, "policies", "audited.toml")
	snapshot := func() map[string]string {
		m := map[string]string{}
		for _, p := range []string{policyPath, filepath.Join(dir, SettingsFile), ts.tripwirePath()} {
			b, _ := os.ReadFile(p)
			m[p] = string(b)
		}
		return m
	}

	// Each change, recorded once.
	var tokHash, hookID string
	steps := []struct {
		target, action string
		do             func() resp
	}{
		{"token", "create", func() resp {
			r := ts.call("POST", "/api/tokens", adminTok, map[string]any{"role": "auditor", "label": "audited"})
			tokHash, _ = r.json(t)["token_hash"].(string)
			return r
		}},
		{"token", "delete", func() resp { return ts.call("DELETE", "/api/tokens/"+tokHash, adminTok, nil) }},
		{"webhook", "create", func() resp {
			r := ts.call("POST", "/api/webhooks", adminTok, map[string]any{"label": "siem", "url": "https://splunk.example.com/services/collector"})
			hookID, _ = r.json(t)["id"].(string)
			return r
		}},
		{"webhook", "update", func() resp {
			return ts.call("PUT", "/api/webhooks/"+hookID, adminTok, map[string]any{"enabled": false})
		}},
		{"webhook", "delete", func() resp { return ts.call("DELETE", "/api/webhooks/"+hookID, adminTok, nil) }},
		{"policy", "create", func() resp { return ts.call("PUT", "/api/policies/audited", adminTok, policy) }},
		{"policy", "delete", func() resp { return ts.call("DELETE", "/api/policies/audited", adminTok, nil) }},
		{"config", "update", func() resp { return ts.call("PUT", "/api/config", adminTok, map[string]any{"max_steps": 42}) }},
		{"tripwire", "update", func() resp {
			return ts.call("PUT", "/api/tripwire", adminTok, map[string]any{"require_https": true})
		}},
	}
	for _, st := range steps {
		before := len(ts.adminChanges())
		if r := st.do(); r.status >= 300 {
			t.Fatalf("%s %s: %d %s", st.action, st.target, r.status, r.body)
		}
		after := ts.adminChanges()
		if len(after) != before+1 {
			t.Fatalf("%s %s: %d admin_change events; want exactly 1", st.action, st.target, len(after)-before)
		}
		if got := after[len(after)-1]; got.Target != st.target || got.Action != st.action {
			t.Errorf("%s %s recorded as %s %s", st.action, st.target, got.Action, got.Target)
		}
	}

	// The same routes with the admin_change append failing.
	b, _, err := ledgerdb.OpenBackend(context.Background(), dbURL, dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	failing, err := ledger.New(context.Background(), auditDownBackend{b}, ts.ledgerOptions())
	if err != nil {
		t.Fatal(err)
	}
	ts.lmu.Lock()
	good := ts.l
	ts.l = failing
	ts.lmu.Unlock()
	defer func() {
		ts.lmu.Lock()
		ts.l = good
		ts.lmu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		failing.Close(ctx)
	}()
	// A policy and a webhook to delete, a token to delete.
	if err := os.WriteFile(policyPath, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := good.CreateWebhook(context.Background(), ledger.Webhook{Label: "kept", URL: "https://siem.example.com/", SIEMFormat: "json", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	hookID = w.ID.String()
	tokHash = TokenHash("kept-token")
	if err := good.PutToken(context.Background(), ledger.Token{Hash: tokHash, Role: RoleAuditor}); err != nil {
		t.Fatal(err)
	}
	files := snapshot()
	before := len(ts.adminChanges())
	toks, _ := good.Tokens(context.Background())
	for _, st := range steps {
		if st.target == "token" && st.action == "create" {
			st.do()
			tokHash = TokenHash("kept-token") // the failed create named none
			continue
		}
		if st.target == "webhook" && st.action == "create" {
			st.do()
			hookID = w.ID.String()
			continue
		}
		if r := st.do(); r.status < 500 {
			t.Errorf("%s %s with the audit failing: %d %s; want an error", st.action, st.target, r.status, r.body)
		}
	}
	if n := len(ts.adminChanges()); n != before {
		t.Fatalf("%d admin_change events appeared with the append failing", n-before)
	}
	hashes := func(ts []ledger.Token) (out []string) {
		for _, t := range ts {
			out = append(out, t.Hash)
		}
		return out
	}
	if after, _ := good.Tokens(context.Background()); !slices.Equal(hashes(after), hashes(toks)) {
		t.Errorf("tokens %v before, %v after failed audited changes", hashes(toks), hashes(after))
	}
	if got, err := good.Webhook(context.Background(), w.ID); err != nil || !got.Enabled {
		t.Errorf("webhook after failed audited changes: %+v, %v; want it enabled", got, err)
	}
	if ws, _ := good.Webhooks(context.Background()); len(ws) != 1 {
		t.Errorf("%d webhooks after a failed audited create; want 1", len(ws))
	}
	for p, want := range files {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s changed though its admin_change was not recorded:\n%s\nwas\n%s", p, b, want)
		}
	}
	if cur := ts.settings.apply(ts.opts.Config); cur.Agent.MaxSteps != 42 {
		t.Errorf("settings in effect changed to max_steps %d", cur.Agent.MaxSteps)
	}
}
