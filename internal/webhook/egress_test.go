package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
	"github.com/ironvise/ironvise/internal/webhook"
)

// TestEgressDenialDelivered: a refused connection reaches a SIEM endpoint
// (a real loopback HTTP server) as its own kind, under the default kinds,
// in every format; an allowed connection is not sent; a credential spelled
// as a host name is redacted on the way out even when the stored payload
// carried it (the webhook redacts again, whoever wrote the event).
func TestEgressDenialDelivered(t *testing.T) {
	ctx := context.Background()
	l, err := ledgerdb.Open(ctx, "sqlite::memory:", 1, ledger.Options{DataDir: t.TempDir(), CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "audit", SandboxTier: "native-linux"})
	if err != nil {
		t.Fatal(err)
	}
	const token = "ghp_r8sk2mp9qx4vt7wl1nb6cj3hf5dg0azye2uq"
	rec := func(host, v, code, reason string) map[string]any {
		return map[string]any{"step": 1, "intent_id": "00000000-0000-4000-8000-000000000001", "protocol": "connect",
			"host": host, "port": 443, "bytes_up": 0, "bytes_down": 0, "start": "2026-12-02T12:00:00Z", "duration_ms": 1,
			"verdict": v, "code": code, "reason": reason}
	}
	var evs []ledger.Event
	for _, p := range []map[string]any{
		rec("allowed.test", "allow", "ok", "allowed by allowed.test"),
		rec(token+".evil.test", "deny", "egress_domain_not_allowed", "host "+token+".evil.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS"),
	} {
		ev, err := l.Append(ctx, s.ID, ledger.TypeEgress, p)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if k := webhook.Classify(&evs[0]); k != "" {
		t.Fatalf("an allowed connection is classified %q; want none", k)
	}
	recv := map[string]*receiver{}
	var targets []webhook.Target
	for _, f := range []string{webhook.FormatJSON, webhook.FormatCEF, webhook.FormatLEEF} {
		recv[f] = newReceiver(t, nil)
		targets = append(targets, webhook.Target{URL: recv[f].srv.URL + "/hook", Format: f})
	}
	d, err := webhook.New(webhook.Options{Targets: targets, AllowPrivate: true, RateLimit: 1000, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		d.Notify(ev)
	}
	for f, r := range recv {
		waitFor(t, f+" delivery", func() bool { return len(r.requests()) >= 1 })
	}
	closeD(t, d)
	for f, r := range recv {
		reqs := r.requests()
		if len(reqs) != 1 {
			t.Fatalf("%s: %d deliveries; want the denial only", f, len(reqs))
		}
		body := reqs[0].body
		if bytes.Contains(body, []byte(token)) {
			t.Fatalf("%s: the token in the host name was delivered: %s", f, body)
		}
		switch f {
		case webhook.FormatJSON:
			var m struct {
				Kind     string `json:"kind"`
				Severity int    `json:"severity"`
				Type     string `json:"type"`
				Payload  struct {
					Host string `json:"host"`
					Code string `json:"code"`
				} `json:"payload"`
			}
			if err := json.Unmarshal(body, &m); err != nil || m.Kind != webhook.KindEgressDenial || m.Type != ledger.TypeEgress ||
				m.Severity != 7 || m.Payload.Code != "egress_domain_not_allowed" || !strings.HasSuffix(m.Payload.Host, ".evil.test") {
				t.Fatalf("json body %s (%v)", body, err)
			}
		case webhook.FormatCEF:
			if !bytes.HasPrefix(body, []byte("CEF:0|IronVise|IronVise|test|egress_denial|IronVise egress denial egress_domain_not_allowed|7|")) ||
				!bytes.Contains(body, []byte("egress refused: ")) {
				t.Fatalf("cef body: %s", body)
			}
		case webhook.FormatLEEF:
			if !bytes.HasPrefix(body, []byte("LEEF:2.0|IronVise|IronVise|test|egress_denial|")) {
				t.Fatalf("leef body: %s", body)
			}
		}
	}
}
