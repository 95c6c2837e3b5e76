package server

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestProofsAndCheckpoints covers routes 18 and 19 and the 1 s checkpoint
// rule of docs/design/api.md#checkpoints: a proof verifies offline against
// the checkpoint.
func TestProofsAndCheckpoints(t *testing.T) {
	ts := startServer(t, tsOptions{})
	id := ts.createSession(map[string]any{"goal": "prove", "agent_loop": false})
	r := ts.call("POST", "/api/sessions/"+id+"/events", adminTok, map[string]any{"type": "thought", "content": "to be proven"})
	evID := int64(r.json(t)["id"].(float64))
	seq := strconv.Itoa(int(r.json(t)["sequence"].(float64)))
	// Not covered yet: 409 with Retry-After (unless the checkpoint already
	// came; then the proof answers).
	first := ts.call("GET", "/api/sessions/"+id+"/events/"+seq+"/proof", auditorTok, nil)
	if first.status == 409 && first.header.Get("Retry-After") == "" {
		t.Errorf("409 without Retry-After")
	}
	time.Sleep(1200 * time.Millisecond)
	cp := ts.call("GET", "/api/checkpoints/latest", auditorTok, nil).json(t)
	if int64(cp["tree_size"].(float64)) < evID {
		t.Fatalf("no checkpoint within 1 s after appends stopped: %v", cp)
	}
	p := ts.call("GET", "/api/sessions/"+id+"/events/"+seq+"/proof", auditorTok, nil)
	if p.status != 200 {
		t.Fatalf("proof: %d %s", p.status, p.body)
	}
	m := p.json(t)
	var path []ledger.Hash
	for _, h := range m["audit_path"].([]any) {
		x, _ := ledger.ParseHash(h.(string))
		path = append(path, x)
	}
	root, _ := ledger.ParseHash(m["root_hash"].(string))
	leaf, _ := ledger.ParseHash(m["content_hash"].(string))
	if err := ledger.VerifyInclusion(path, int64(m["tree_size"].(float64)), root, int64(m["leaf_index"].(float64)), leaf); err != nil {
		t.Errorf("the proof does not verify: %v", err)
	}
	if int64(m["event_id"].(float64)) != evID || m["checkpoint"] == nil {
		t.Errorf("proof %v", m)
	}
	if sig, _ := hex.DecodeString(cp["signature"].(string)); len(sig) != 64 {
		t.Errorf("checkpoint signature %v", cp["signature"])
	}
	// An idle ledger stays silent: no further checkpoint without events.
	time.Sleep(1200 * time.Millisecond)
	if again := ts.call("GET", "/api/checkpoints/latest", auditorTok, nil).json(t); again["tree_size"] != cp["tree_size"] {
		t.Errorf("checkpoint written on an idle ledger: %v then %v", cp["tree_size"], again["tree_size"])
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/api/sessions/" + id + "/events/999/proof", 404},
		{"/api/sessions/" + id + "/events/-1/proof", 400},
		{"/api/sessions/" + id + "/events/x/proof", 400},
		{"/api/sessions/" + id + "/events/0/proof?tree_size=3", 404},
		{"/api/sessions/" + id + "/events/0/proof?tree_size=zero", 400},
		{"/api/sessions/" + someID + "/events/0/proof", 404},
	} {
		if r := ts.call("GET", c.path, auditorTok, nil); r.status != c.want {
			t.Errorf("%s: %d; want %d", c.path, r.status, c.want)
		}
	}
}

// TestResetDemo: the embedded ledger is replaced (the old file kept aside),
// tokens carry over, streams end
// (docs/design/api.md#tokens-webhooks-policies).
func TestResetDemo(t *testing.T) {
	dataDir := t.TempDir()
	ts := startServer(t, tsOptions{dataDir: dataDir, env: map[string]string{"ECTO_DEMO_MODE": "true", "DATABASE_URL": "<unset>"}})
	ts.createSession(map[string]any{"goal": "before the reset", "agent_loop": false})
	tok := ts.call("POST", "/api/tokens", adminTok, map[string]any{"role": "auditor"}).json(t)["token"].(string)
	stream := ts.openStream("/api/stream", adminTok)
	r := ts.call("POST", "/api/admin/reset-demo", adminTok, nil)
	if r.status != 200 || string(r.body) != `{"ok":true,"message":"demo ledger reset"}` {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	select {
	case <-stream.done:
	case <-time.After(5 * time.Second):
		t.Error("the stream did not end at the reset")
	}
	if l := ts.call("GET", "/api/sessions", tok, nil); l.status != 200 || string(l.body) != "[]" {
		t.Errorf("after reset: %d %s", l.status, l.body)
	}
	// The new ledger holds its instance genesis, the reset's admin_change
	// and checkpoints only (how many checkpoints depends on timing): no
	// event of the old ledger or of a stopped session leaks into it.
	evs, err := ts.ledger().Events(context.Background(), ledger.InstanceSessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	resets := 0
	for i, e := range evs {
		kinds = append(kinds, e.Type)
		switch {
		case i == 0 && e.Type == ledger.TypeGenesis, e.Type == ledger.TypeCheckpoint:
		case e.Type == ledger.TypeAdminChange && strings.Contains(string(e.Payload), `"demo_reset"`):
			resets++
		default:
			t.Errorf("new ledger: unexpected event %d %s %s", i, e.Type, e.Payload)
		}
	}
	if resets != 1 || len(evs) < 3 {
		t.Errorf("new ledger: %v; want genesis, checkpoint(s) and one demo_reset admin_change", kinds)
	}
	if m := ts.call("GET", "/api/metrics", adminTok, nil).json(t); m["total_events"] != float64(len(evs)) || m["total_sessions"] != float64(0) {
		t.Errorf("metrics after reset: %v; want %d events and no session", m, len(evs))
	}
	matches, _ := filepath.Glob(filepath.Join(dataDir, "ledger.db.reset-*"))
	if len(matches) == 0 {
		t.Error("the old ledger file was not kept aside")
	}
	if _, err := os.Stat(filepath.Join(dataDir, "ledger.db")); err != nil {
		t.Errorf("no new ledger file: %v", err)
	}
}
