package server

import (
	"strings"
	"testing"
)

// TestIdleSessionCaps is issue 13 item 3: API sessions waiting for
// intents are capped per creating token and in all (429 naming the
// variable); sealing or completing one frees its place; agent-loop
// sessions are not counted.
func TestIdleSessionCaps(t *testing.T) {
	ts := startServer(t, tsOptions{env: map[string]string{"ECTO_MAX_IDLE_SESSIONS_PER_TOKEN": "2", "ECTO_MAX_IDLE_SESSIONS": "3"}})
	create := func(tok string, loop bool) resp {
		return ts.call("POST", "/api/sessions", tok, map[string]any{"goal": "wait", "agent_loop": loop})
	}
	var agentIDs []string
	for range 2 {
		r := create(agentTok, false)
		if r.status != 200 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		agentIDs = append(agentIDs, r.json(t)["id"].(string))
	}
	if r := create(agentTok, false); r.status != 429 || !strings.Contains(string(r.body), "ECTO_MAX_IDLE_SESSIONS_PER_TOKEN") {
		t.Fatalf("third session of one token: %d %s; want 429 naming the per-token cap", r.status, r.body)
	}
	if r := create(adminTok, false); r.status != 200 {
		t.Fatalf("another token's first session: %d %s", r.status, r.body)
	}
	if r := create(adminTok, false); r.status != 429 || !strings.Contains(string(r.body), "ECTO_MAX_IDLE_SESSIONS=") {
		t.Fatalf("fourth session in all: %d %s; want 429 naming the global cap", r.status, r.body)
	}
	if r := create(adminTok, true); r.status != 200 {
		t.Fatalf("an agent-loop session is not an idle one: %d %s", r.status, r.body)
	}
	if r := ts.call("POST", "/api/sessions/"+agentIDs[0]+"/seal", agentTok, nil); r.status != 200 {
		t.Fatalf("seal: %d %s", r.status, r.body)
	}
	ts.intent(agentIDs[1], `{"action":"complete","params":{"findings":[]}}`)
	for _, tok := range []string{agentTok, agentTok} {
		if r := create(tok, false); r.status != 200 {
			t.Fatalf("after a seal and a completion: %d %s", r.status, r.body)
		}
	}
}
