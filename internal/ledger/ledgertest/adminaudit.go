package ledgertest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// errInjected is the failure the admin-audit test injects into the append
// of an admin_change event.
var errInjected = errors.New("ledgertest: injected failure writing the admin_change event")

// auditFailingBackend fails, while armed, every transaction that writes an
// admin_change event, at the moment the event rows are written: after the
// administrative write of the same transaction has gone to the database.
type auditFailingBackend struct {
	ledger.Backend
	armed atomic.Bool
}

func (b *auditFailingBackend) Update(ctx context.Context, fn func(ledger.WriteTx) error) error {
	return b.Backend.Update(ctx, func(tx ledger.WriteTx) error { return fn(auditFailingTx{tx, b}) })
}

type auditFailingTx struct {
	ledger.WriteTx
	b *auditFailingBackend
}

func (tx auditFailingTx) Apply(ctx context.Context, c *ledger.Changes) error {
	for _, ev := range c.Events {
		if ev.Type == ledger.TypeAdminChange && tx.b.armed.Load() {
			return errInjected
		}
	}
	return tx.WriteTx.Apply(ctx, c)
}

// testAdminChangeAudited: an administrative write and its admin_change
// event commit in one transaction. When the event cannot be written the
// write is rolled back; when it can, the change has exactly one event.
func testAdminChangeAudited(t *testing.T, h Harness) {
	db := h.NewDB(t)
	issuer, err := ledger.GenerateSigningKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &auditFailingBackend{Backend: db.Backend(t)}
	l, err := ledger.New(ctx(), b, ledger.Options{IssuerKey: issuer, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	audit := func(action, name string) ledger.AdminWriter {
		return l.Audited(map[string]any{"target": "test", "action": action, "name": name, "actor": "conformance"})
	}
	// auditEvents returns the names of the admin_change events so far.
	auditEvents := func() []string {
		t.Helper()
		evs, err := l.Events(ctx(), ledger.InstanceSessionID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ev := range evs {
			if ev.Type == ledger.TypeAdminChange {
				_, rest, _ := strings.Cut(string(ev.Payload), `"name":"`)
				name, _, _ := strings.Cut(rest, `"`)
				names = append(names, name)
			}
		}
		return names
	}
	expectAudit := func(want ...string) {
		t.Helper()
		if got := auditEvents(); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("admin_change events for %q; want exactly %q", got, want)
		}
	}
	mustFail := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, errInjected) {
			t.Fatalf("%s with the audit append failing: %v; want the injected failure", what, err)
		}
	}

	// Every administrative write, its audit failing: nothing changes.
	hash := strings.Repeat("3c", 32)
	b.armed.Store(true)
	mustFail("create token", audit("create", "tok").PutToken(ctx(), ledger.Token{Hash: hash, Role: "admin"}))
	if _, err := l.Token(ctx(), hash); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a token whose audit failed was stored: %v", err)
	}
	wid, err := l.NewWebhookID()
	if err != nil {
		t.Fatal(err)
	}
	_, err = audit("create", "hook").CreateWebhook(ctx(), ledger.Webhook{ID: wid, Label: "x", URL: "https://siem.example.com/", SIEMFormat: "json", Enabled: true, BearerToken: "b"})
	mustFail("create webhook", err)
	if _, err := l.Webhook(ctx(), wid); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a webhook whose audit failed was stored: %v", err)
	}
	expectAudit()

	// The same writes audited: one event each.
	b.armed.Store(false)
	if err := audit("create", "tok").PutToken(ctx(), ledger.Token{Hash: hash, Role: "admin"}); err != nil {
		t.Fatal(err)
	}
	w, err := audit("create", "hook").CreateWebhook(ctx(), ledger.Webhook{ID: wid, Label: "x", URL: "https://siem.example.com/", SIEMFormat: "json", Enabled: true, BearerToken: "b"})
	if err != nil || w.ID != wid {
		t.Fatalf("CreateWebhook = %v, %v; want id %s", w.ID, err, wid)
	}
	expectAudit("tok", "hook")

	// Updates and deletions, audit failing: the rows stay as they were.
	b.armed.Store(true)
	_, err = audit("update", "hook").SetWebhookEnabled(ctx(), wid, false)
	mustFail("disable webhook", err)
	mustFail("delete webhook", audit("delete", "hook").DeleteWebhook(ctx(), wid))
	mustFail("delete token", audit("delete", "tok").DeleteToken(ctx(), hash))
	if got, err := l.Webhook(ctx(), wid); err != nil || !got.Enabled {
		t.Fatalf("webhook after failed audits = %+v, %v; want it enabled", got, err)
	}
	if _, err := l.Token(ctx(), hash); err != nil {
		t.Fatalf("token after a failed audit: %v", err)
	}
	expectAudit("tok", "hook")

	// Audited: each change once.
	b.armed.Store(false)
	if got, err := audit("update", "hook").SetWebhookEnabled(ctx(), wid, false); err != nil || got.Enabled {
		t.Fatalf("disable = %+v, %v", got, err)
	}
	if err := audit("delete", "hook").DeleteWebhook(ctx(), wid); err != nil {
		t.Fatal(err)
	}
	if err := audit("delete", "tok").DeleteToken(ctx(), hash); err != nil {
		t.Fatal(err)
	}
	expectAudit("tok", "hook", "hook", "hook", "tok")

	// A write that fails by itself appends no event.
	if err := audit("delete", "gone").DeleteWebhook(ctx(), uuid.New()); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("delete of an unknown webhook: %v; want ErrNotFound", err)
	}
	expectAudit("tok", "hook", "hook", "hook", "tok")
	r, err := l.VerifySession(ctx(), ledger.InstanceSessionID)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, r)
}
