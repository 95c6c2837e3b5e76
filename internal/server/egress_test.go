package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestEgressEvents: egress events are IronVise's own (a client cannot
// append one), the event stream redacts a credential spelled as a host
// name even when a stored payload carries it, and /metrics counts the
// connections by verdict.
func TestEgressEvents(t *testing.T) {
	ts := startServer(t, tsOptions{})
	id := ts.createSession(map[string]any{"goal": "net check", "agent_loop": false})
	r := ts.call("POST", "/api/sessions/"+id+"/events", adminTok, map[string]any{"type": "egress", "host": "allowed.test", "verdict": "allow"})
	if r.status != 422 || !strings.Contains(string(r.body), "written by IronVise itself") {
		t.Fatalf("client append of an egress event: %d %s; want 422", r.status, r.body)
	}
	const token = "ghp_r8sk2mp9qx4vt7wl1nb6cj3hf5dg0azye2uq"
	sid := uuid.MustParse(id)
	for _, p := range []map[string]any{
		{"step": 1, "protocol": "connect", "host": "allowed.test", "port": 443, "verdict": "allow", "code": "ok", "reason": "allowed by allowed.test"},
		{"step": 1, "protocol": "connect", "host": token + ".evil.test", "port": 443, "verdict": "deny", "code": "egress_domain_not_allowed",
			"reason": "host " + token + ".evil.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS"},
	} {
		if _, err := ts.ledger().Append(context.Background(), sid, ledger.TypeEgress, p); err != nil {
			t.Fatal(err)
		}
	}
	c := ts.openStream("/api/sessions/"+id+"/events/stream", auditorTok)
	var seen int
	for _, f := range collect(t, c, 500*time.Millisecond) {
		if strings.Contains(f.raw, token) {
			t.Fatalf("the stream carries the token: %s", f.data)
		}
		if strings.Contains(f.raw, `"type":"egress"`) {
			seen++
		}
	}
	if seen != 2 {
		t.Fatalf("%d egress frames streamed; want 2", seen)
	}
	m := ts.call("GET", "/metrics", adminTok, nil)
	for _, want := range []string{`ironvise_egress_connections_total{verdict="allow"} 1`, `ironvise_egress_connections_total{verdict="deny"} 1`} {
		if !strings.Contains(string(m.body), want) {
			t.Fatalf("/metrics lacks %s", want)
		}
	}
}
