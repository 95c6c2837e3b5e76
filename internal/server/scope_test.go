package server

import (
	"strings"
	"testing"
	"time"
)

// TestScopedAgentTokens is issue 13 item 7: an agent token created with
// "scope":"own_sessions" reaches only the sessions it created. Every route
// that names another session answers 403 (reads included), the session
// list and the event stream show only its own, and its own sessions work
// as with any agent token. Unscoped tokens keep their global role.
func TestScopedAgentTokens(t *testing.T) {
	ts := startServer(t, tsOptions{})
	r := ts.call("POST", "/api/tokens", adminTok, map[string]any{"role": "agent", "label": "one client", "scope": "own_sessions"})
	if r.status != 200 || r.json(t)["scope"] != "own_sessions" {
		t.Fatalf("create a scoped token: %d %s", r.status, r.body)
	}
	scoped := r.json(t)["token"].(string)
	for _, bad := range []map[string]any{
		{"role": "admin", "scope": "own_sessions"},
		{"role": "auditor", "scope": "own_sessions"},
		{"role": "agent", "scope": "mine"},
		{"role": "agent", "scope": 1},
	} {
		if r := ts.call("POST", "/api/tokens", adminTok, bad); r.status != 422 {
			t.Errorf("create token %v: %d %s; want 422", bad, r.status, r.body)
		}
	}

	stream := ts.openStream("/api/stream", scoped)
	create := func(tok string) string {
		r := ts.call("POST", "/api/sessions", tok, map[string]any{"goal": "inspect the notes", "agent_loop": false})
		if r.status != 200 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		return r.json(t)["id"].(string)
	}
	own, other := create(scoped), create(adminTok)
	ts.intent(other, `{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the notes file"}`)

	// The scoped token's own session works like any agent token's.
	if r := ts.call("POST", "/api/sessions/"+own+"/intents", scoped, `{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the notes file"}`, "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("intent on its own session: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/api/sessions/" + own, "/api/sessions/" + own + "/verify", "/api/reports/" + own, "/api/events?session_id=" + own} {
		if r := ts.call("GET", path, scoped, nil); r.status != 200 {
			t.Errorf("GET %s with its own session: %d %s", path, r.status, r.body)
		}
	}

	// Every route naming another token's session: 403.
	routes := []struct{ method, path, body string }{
		{"GET", "/api/sessions/" + other, ""},
		{"POST", "/api/sessions/" + other + "/events", `{"type":"thought","content":"x"}`},
		{"POST", "/api/sessions/" + other + "/intents", `{"action":"complete"}`},
		{"POST", "/api/sessions/" + other + "/chat", `{"message":"hello"}`},
		{"GET", "/api/sessions/" + other + "/verify", ""},
		{"GET", "/api/sessions/" + other + "/compliance", ""},
		{"GET", "/api/sessions/" + other + "/vc", ""},
		{"GET", "/api/sessions/" + other + "/vc/verify", ""},
		{"GET", "/api/sessions/" + other + "/events/stream", ""},
		{"GET", "/api/sessions/" + other + "/events/1/proof", ""},
		{"GET", "/api/events?session_id=" + other, ""},
		{"GET", "/api/stream?session_id=" + other, ""},
		{"GET", "/api/certificates/" + other, ""},
		{"GET", "/api/reports/" + other, ""},
		{"GET", "/api/approvals/" + other + "/pending", ""},
		{"POST", "/api/sessions/" + other + "/seal", ""},
	}
	for _, rt := range routes {
		var body any
		hdr := []string{}
		if rt.body != "" {
			body, hdr = rt.body, []string{"Content-Type", "application/json"}
		}
		r := ts.call(rt.method, rt.path, scoped, body, hdr...)
		if r.status != 403 || !strings.Contains(string(r.body), "own_sessions") {
			t.Errorf("%s %s with another token's session: %d %s; want 403", rt.method, rt.path, r.status, r.body)
		}
	}
	if s := ts.call("GET", "/api/sessions/"+other, adminTok, nil).json(t); s["sealed"] != false {
		t.Fatalf("the scoped token sealed another's session: %v", s)
	}
	// An unscoped agent token keeps its global role.
	ts.wantStatus(t, "an unscoped agent token", 200, "GET", "/api/sessions/"+other, agentTok, nil)

	list := ts.call("GET", "/api/sessions", scoped, nil).list(t)
	if len(list) != 1 || list[0]["id"] != own {
		t.Errorf("the scoped token's session list: %v; want only %s", list, own)
	}
	// The stream carried events of its own session and none of the other.
	deadline := time.Now().Add(5 * time.Second)
	sawOwn := false
	for time.Now().Before(deadline) {
		f, ok := stream.next(t, 500*time.Millisecond)
		if !ok {
			if sawOwn {
				break
			}
			continue
		}
		if strings.Contains(f.data, other) || strings.Contains(f.data, `"session_id":null`) {
			t.Fatalf("the scoped token's stream carried %s", f.data)
		}
		sawOwn = sawOwn || strings.Contains(f.data, own)
	}
	if !sawOwn {
		t.Fatal("the scoped token's stream carried nothing of its own session")
	}
	if r := ts.call("POST", "/api/sessions/"+own+"/seal", scoped, nil); r.status != 200 {
		t.Fatalf("seal its own session: %d %s", r.status, r.body)
	}
	toks := ts.call("GET", "/api/tokens", adminTok, nil).list(t)
	found := false
	for _, tk := range toks {
		found = found || (tk["label"] == "one client" && tk["scope"] == "own_sessions")
	}
	if !found {
		t.Errorf("token list %v lacks the scoped token's scope", toks)
	}
}
