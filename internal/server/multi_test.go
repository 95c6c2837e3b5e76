package server

import (
	"strconv"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// pgURL returns a fresh schema of the test PostgreSQL, or skips.
func pgURL(t *testing.T) string {
	t.Helper()
	url, _ := ledgertest.PostgresSchema(t, "ivsrv", "the PostgreSQL tests")
	return url
}

// TestTwoInstancesOnePostgres: two servers sharing one PostgreSQL ledger
// see each other's sessions and events (a stream on A follows appends made
// through B within 1 s), approvals decided on either reach the driving
// instance, a session is driven only by the instance that created it, and a
// token deleted on one fails on the other within the cache bound.
func TestTwoInstancesOnePostgres(t *testing.T) {
	url := pgURL(t)
	dataDir := t.TempDir() // one issuer key for the shared ledger
	env := map[string]string{"DATABASE_URL": url}
	a := startServer(t, tsOptions{dataDir: dataDir, env: env})
	b := startServer(t, tsOptions{dataDir: dataDir, env: env})

	headID := func(ts *testServer) int {
		m := ts.call("GET", "/api/checkpoints/latest", adminTok, nil).json(t)
		return int(m["tree_size"].(float64))
	}
	live := a.openStream("/api/stream?after="+strconv.Itoa(headID(a)), adminTok)

	id := b.createSession(map[string]any{"goal": "shared ledger", "agent_loop": false})
	if r := a.call("GET", "/api/sessions/"+id, adminTok, nil); r.status != 200 {
		t.Fatalf("A does not see B's session: %d", r.status)
	}
	r := b.call("POST", "/api/sessions/"+id+"/events", adminTok, map[string]any{"type": "thought", "content": "from B"})
	appendedAt := time.Now()
	wantID := strconv.Itoa(int(r.json(t)["id"].(float64)))
	for {
		f, ok := live.next(t, 2*time.Second)
		if !ok {
			t.Fatalf("A's stream did not deliver B's event %s", wantID)
		}
		if f.id == wantID {
			if d := time.Since(appendedAt); d > time.Second {
				t.Errorf("B's event reached A's stream after %v", d)
			} else {
				t.Logf("B's event reached A's stream after %v", d)
			}
			break
		}
	}

	// Driven only by its creator.
	if x := a.call("POST", "/api/sessions/"+id+"/intents", agentTok, `{"action":"complete"}`, "Content-Type", "application/json"); x.status != 409 {
		t.Errorf("intent on the other instance: %d %s", x.status, x.body)
	}

	// An approval decided on A reaches the intent waiting on B.
	if r := a.call("PUT", "/api/policies/gated", adminTok, gatedPolicyTOML); r.status != 200 {
		t.Fatalf("policy: %d", r.status)
	}
	gated := b.createSession(map[string]any{"goal": "say hello", "agent_loop": false, "policy": "gated"})
	done := make(chan map[string]any, 1)
	go func() {
		done <- b.intent(gated, `{"action":"run_command","params":{"command":"echo hi"},"justification":"greet the operator"}`)
	}()
	var gate any
	for deadline := time.Now().Add(5 * time.Second); gate == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if p, ok := a.call("GET", "/api/approvals/"+gated+"/pending", adminTok, nil).json(t)["pending"].(map[string]any); ok {
			gate = p["gate_id"]
		}
	}
	if gate == nil {
		t.Fatal("A does not see B's pending gate")
	}
	if r := a.call("POST", "/api/approvals/"+gated, adminTok, map[string]any{"gate_id": gate, "approved": true}); r.status != 200 {
		t.Fatalf("decide on A: %d %s", r.status, r.body)
	}
	select {
	case res := <-done:
		if res["verdict"] != "allow" {
			t.Errorf("intent after A's approval: %v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("B's intent never saw A's decision")
	}

	// Sealed on A: B takes no more intents for it.
	if r := a.call("POST", "/api/sessions/"+gated+"/seal", adminTok, nil); r.status != 200 {
		t.Fatalf("seal on A: %d %s", r.status, r.body)
	}
	if x := b.call("POST", "/api/sessions/"+gated+"/intents", agentTok, `{"action":"complete"}`, "Content-Type", "application/json"); x.status != 409 {
		t.Errorf("intent after a seal elsewhere: %d", x.status)
	}
	if v := b.call("GET", "/api/sessions/"+gated+"/verify", adminTok, nil).json(t); v["ok"] != true {
		t.Errorf("verify: %v", v)
	}

	// A token deleted on A fails on B within the cache bound.
	tok := a.call("POST", "/api/tokens", adminTok, map[string]any{"role": "auditor"}).json(t)
	if r := b.call("GET", "/api/sessions", tok["token"].(string), nil); r.status != 200 {
		t.Fatalf("new token on B: %d", r.status)
	}
	a.call("DELETE", "/api/tokens/"+tok["token_hash"].(string), adminTok, nil)
	time.Sleep(tokenCacheTTL + 100*time.Millisecond)
	if r := b.call("GET", "/api/sessions", tok["token"].(string), nil); r.status != 401 {
		t.Errorf("deleted token on B: %d", r.status)
	}
}
