package server

import (
	"context"
	"runtime"
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

// TestDashboardShowsEgress: the dashboard shows a step's connections
// inside the step, refused ones marked, and offers egress_denial among the
// webhook kinds, checked by default.
func TestDashboardShowsEgress(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Debian's chromium runs on Linux")
	}
	d := startBrowser(t)
	ts := startServer(t, tsOptions{})
	id := ts.createSession(map[string]any{"goal": "install the packages", "agent_loop": false})
	r := ts.intent(id, `{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the notes file"}`)
	intentID, _ := r["intent_id"].(string)
	for _, p := range []map[string]any{
		{"step": 1, "intent_id": intentID, "protocol": "connect", "host": "pypi.org", "port": 443, "bytes_up": 517, "bytes_down": 48213,
			"duration_ms": 84, "verdict": "allow", "code": "ok", "rule": "pypi.org", "reason": "ok"},
		{"step": 1, "intent_id": intentID, "protocol": "connect", "host": "denied.test", "port": 443, "bytes_up": 0, "bytes_down": 0,
			"duration_ms": 0, "verdict": "deny", "code": "egress_domain_not_allowed", "reason": "host denied.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS"},
	} {
		if _, err := ts.ledger().Append(context.Background(), uuid.MustParse(id), ledger.TypeEgress, p); err != nil {
			t.Fatal(err)
		}
	}
	d.cmd("POST", "/url", map[string]any{"url": ts.url + "/?token=" + adminTok})
	d.clickOn(`tr[data-session="`+id+`"] button`, 10*time.Second)
	d.wait("#view-session:not([hidden])", "", 5*time.Second)
	d.wait(`#s-timeline li.step .egress`, "2 connection(s) through the egress proxy, 1 refused", 10*time.Second)
	if txt := d.waitText(`#s-timeline li.step .egress li[data-verdict="deny"]`, "denied.test:443", 5*time.Second); !strings.Contains(txt, "egress_domain_not_allowed: host denied.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS") {
		t.Errorf("refused connection shown as %q", txt)
	}
	if txt := d.waitText(`#s-timeline li.step .egress li[data-verdict="allow"]`, "pypi.org:443", 5*time.Second); !strings.Contains(txt, "48213 B down") || !strings.Contains(txt, "rule pypi.org") {
		t.Errorf("allowed connection shown as %q", txt)
	}
	if n := d.script(`return document.querySelectorAll('#s-timeline > li[data-origin="client"]').length`); string(n) != "0" {
		t.Errorf("egress events shown as a client's: %s", n)
	}
	if got := d.script(`const b = document.getElementById('wh-kind-egress_denial'); return b ? b.checked : null`); string(got) != "true" {
		t.Errorf("webhook kind egress_denial checkbox: %s; want present and checked by default", got)
	}
	d.screenshot("egress")
}
