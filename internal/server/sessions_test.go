package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/demo"
)

// events returns a session's events.
func (ts *testServer) events(id string) []map[string]any {
	ts.t.Helper()
	return ts.call("GET", "/api/events?session_id="+id, adminTok, nil).list(ts.t)
}

func payloadTypes(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e["payload"].(map[string]any)["type"].(string))
	}
	return out
}

// TestMockSessionEndsWithin2s: an API session with the mock reaches a
// terminal status within 2 s and appends nothing afterwards
// (docs/design/api.md#mock-backend).
func TestMockSessionEndsWithin2s(t *testing.T) {
	ts := startServer(t, tsOptions{})
	start := time.Now()
	id := ts.createSession(map[string]any{"goal": "Audit the service configuration"})
	s := ts.waitEnded(id, 2*time.Second)
	if s["status"] == "running" {
		t.Fatalf("still running after %v", time.Since(start))
	}
	t.Logf("%s after %v with %v events", s["status"], time.Since(start), s["event_count"])
	// The end is followed by the credential and the seal; once sealed,
	// nothing more may be appended.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if s := ts.call("GET", "/api/sessions/"+id, adminTok, nil).json(t); s["sealed"] == true {
			break
		}
	}
	n := len(ts.events(id))
	time.Sleep(1500 * time.Millisecond)
	if m := len(ts.events(id)); m != n {
		t.Errorf("events appended after the end: %d then %d", n, m)
	}
	if s := ts.call("GET", "/api/sessions/"+id, adminTok, nil).json(t); s["sealed"] != true {
		t.Errorf("a loop session seals itself: %v", s)
	}
}

// TestDemoSessionCompletes runs the built-in demo script as an API session
// in the demo workspace, with the mock guard in a real guard worker and the
// real native sandbox: it completes, with the denials of the demo.
func TestDemoSessionCompletes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the native tier of this test is Linux's")
	}
	ws, err := demo.WriteWorkspace(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, tsOptions{native: true, workspace: ws, env: map[string]string{"GUARD_REQUIRED": "true"}})
	start := time.Now()
	id := ts.createSession(map[string]any{"goal": demo.Goal, "policy": demo.Policy})
	s := ts.waitEnded(id, 20*time.Second)
	if s["status"] != "completed" {
		t.Fatalf("status %v after %v: %v", s["status"], time.Since(start), payloadTypes(ts.events(id)))
	}
	t.Logf("completed after %v", time.Since(start))
	denied := map[string]bool{}
	for _, e := range ts.events(id) {
		p := e["payload"].(map[string]any)
		if p["type"] == "check_verdict" && p["decision"] == "deny" {
			denied[p["check"].(string)] = true
		}
	}
	for _, c := range []string{"tripwire", "policy", "guard"} {
		if !denied[c] {
			t.Errorf("no %s denial in the demo session", c)
		}
	}
	if v := ts.call("GET", "/api/sessions/"+id+"/verify", adminTok, nil).json(t); v["ok"] != true {
		t.Errorf("verify: %v", v)
	}
	// Checklist item 22: a completed session carries its credential.
	vc := ts.call("GET", "/api/sessions/"+id+"/vc", auditorTok, nil)
	if m := vc.json(t); vc.status != 200 || !strings.HasPrefix(fmt.Sprint(m["vc_jwt"]), "ey") || m["proof"] != true || m["merkle_root"] == nil {
		t.Errorf("vc: %d %s", vc.status, vc.body)
	}
	vv := ts.call("GET", "/api/sessions/"+id+"/vc/verify", auditorTok, nil)
	if m := vv.json(t); vv.status != 200 || m["valid"] != true || m["signature_verified"] != true {
		t.Errorf("vc/verify: %d %s", vv.status, vv.body)
	}
}

// TestEvidenceRoutes is checklist item 23: certificates and reports exist
// for every session, sealed or not.
func TestEvidenceRoutes(t *testing.T) {
	ts := startServer(t, tsOptions{})
	id := ts.createSession(map[string]any{"goal": "inspect", "agent_loop": false})
	ts.intent(id, `{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the notes file"}`)
	for _, sealed := range []bool{false, true} {
		if sealed {
			ts.call("POST", "/api/sessions/"+id+"/seal", adminTok, nil)
		}
		c := ts.call("GET", "/api/certificates/"+id, auditorTok, nil)
		if c.status != 200 || len(c.body) == 0 || !json.Valid(c.body) || !strings.Contains(c.header.Get("Content-Disposition"), id+".elc") {
			t.Errorf("certificate (sealed=%v): %d %.200s", sealed, c.status, c.body)
		}
		r := ts.call("GET", "/api/reports/"+id, auditorTok, nil)
		if r.status != 200 || r.json(t)["session"] == nil && r.json(t)["session_id"] == nil {
			t.Errorf("report (sealed=%v): %d %.300s", sealed, r.status, r.body)
		}
	}
	for _, p := range []string{"/api/certificates/", "/api/reports/"} {
		if r := ts.call("GET", p+someID, auditorTok, nil); r.status != 404 {
			t.Errorf("%s random: %d", p, r.status)
		}
		if r := ts.call("GET", p+"not-a-uuid", auditorTok, nil); r.status != 400 {
			t.Errorf("%s bad id: %d", p, r.status)
		}
	}
	ts.wantStatus(t, "vc of a session that did not complete", 404, "GET", "/api/sessions/"+id+"/vc", auditorTok, nil)
}

// intent posts one intent and returns the IntentResult.
func (ts *testServer) intent(id string, body string) map[string]any {
	ts.t.Helper()
	r := ts.call("POST", "/api/sessions/"+id+"/intents", agentTok, body, "Content-Type", "application/json")
	if r.status != 200 {
		ts.t.Fatalf("intent: %d %s", r.status, r.body)
	}
	return r.json(ts.t)
}

// TestIntentsNativeSandbox submits intents end to end through the real
// native sandbox (docs/design/api.md#intents).
func TestIntentsNativeSandbox(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the native tier of this test is Linux's")
	}
	ts := startServer(t, tsOptions{native: true})
	id := ts.createSession(map[string]any{"goal": "inspect the notes", "agent_loop": false})

	r := ts.intent(id, `{"action":"run_command","params":{"command":"cat notes.txt; id -u"},"justification":"read the notes file"}`)
	if r["verdict"] != "allow" || r["executed"] != true || r["tier"] != "native-linux" || r["exit_code"] != float64(0) || r["permissive"] != false {
		t.Fatalf("allowed command: %v", r)
	}
	if obs, _ := r["observation"].(string); !strings.Contains(obs, "PermitRootLogin") {
		t.Errorf("observation %q", obs)
	}
	types := map[string]bool{}
	for _, e := range r["events"].([]any) {
		types[e.(map[string]any)["type"].(string)] = true
	}
	for _, want := range []string{"intent_proposed", "check_verdict", "action", "sandbox_result", "observation"} {
		if !types[want] {
			t.Errorf("event %s missing from %v", want, r["events"])
		}
	}

	// The sandbox confines what the checks allow: a write outside the
	// workspace fails inside the sandbox and leaves nothing behind.
	target := filepath.Join(t.TempDir(), "escape")
	r = ts.intent(id, fmt.Sprintf(`{"action":"run_command","params":{"command":"cp notes.txt %s"},"justification":"copy the notes somewhere else"}`, target))
	if r["verdict"] == "allow" && r["exit_code"] == float64(0) {
		t.Errorf("a write outside the workspace succeeded: %v", r)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the sandbox let a file be written outside the workspace")
	}

	cases := []struct{ body, check, rule string }{
		{`{"action":"run_command","params":{"command":"sudo ls"},"justification":"list as root"}`, "tripwire", "cmd_banned_program"},
		{`{"action":"write_file","params":{}}`, "schema", "schema_unknown_action"},
		{`["not","an","object"]`, "schema", ""},
		{`{"action":"read_file","params":{"path":"../../etc/shadow"},"justification":"read the password hashes"}`, "tripwire", "path_traversal"},
	}
	for _, c := range cases {
		r := ts.intent(id, c.body)
		if r["verdict"] != "deny" || r["check"] != c.check || r["executed"] != false || (c.rule != "" && r["rule"] != c.rule) || r["reason"] == nil {
			t.Errorf("%s: %v", c.body, r)
		}
	}
	r = ts.intent(id, `{"action":"complete","params":{"findings":[]}}`)
	if r["verdict"] != "allow" || r["session_status"] != "completed" || r["executed"] != false {
		t.Errorf("complete: %v", r)
	}
	if x := ts.call("POST", "/api/sessions/"+id+"/intents", agentTok, `{"action":"complete"}`, "Content-Type", "application/json"); x.status != 409 {
		t.Errorf("after completion: %d", x.status)
	}
	loop := ts.createSession(map[string]any{"goal": "inspect"})
	if x := ts.call("POST", "/api/sessions/"+loop+"/intents", agentTok, `{"action":"complete"}`, "Content-Type", "application/json"); x.status != 409 {
		t.Errorf("agent-loop session: %d", x.status)
	}
	if x := ts.call("POST", "/api/sessions/"+someID+"/intents", agentTok, `{"action":"complete"}`, "Content-Type", "application/json"); x.status != 404 {
		t.Errorf("unknown session: %d", x.status)
	}
	if v := ts.call("GET", "/api/sessions/"+id+"/verify", adminTok, nil).json(t); v["ok"] != true {
		t.Errorf("verify: %v", v)
	}
}

// TestIntentsInOrder: intents of one session are processed one at a time
// in arrival order.
func TestIntentsInOrder(t *testing.T) {
	ts := startServer(t, tsOptions{})
	id := ts.createSession(map[string]any{"goal": "count", "agent_loop": false})
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ts.intent(id, fmt.Sprintf(`{"action":"run_command","params":{"command":"echo %d"},"justification":"count aloud"}`, i))
		}(i)
		time.Sleep(30 * time.Millisecond)
	}
	wg.Wait()
	steps := map[float64]bool{}
	for _, e := range ts.events(id) {
		p := e["payload"].(map[string]any)
		if p["type"] == "intent_proposed" {
			if steps[p["step"].(float64)] {
				t.Errorf("step %v twice", p["step"])
			}
			steps[p["step"].(float64)] = true
		}
	}
	if len(steps) != 6 {
		t.Errorf("%d steps", len(steps))
	}
}

const gatedPolicyTOML = `name = "gated"
version = "1"
allowed_actions = ["run_command", "read_file", "http_get", "complete"]
default_command_decision = "allow"
default_path_decision = "allow"
default_domain_decision = "deny"
approval_gates = [ { id = "every-command", when = "action == 'run_command'", timeout_seconds = 30 } ]
`

// TestApprovalsThroughRoute25: a gated intent waits until an admin decides
// through route 25; the decision is recorded with the deciding token.
func TestApprovalsThroughRoute25(t *testing.T) {
	ts := startServer(t, tsOptions{})
	if r := ts.call("PUT", "/api/policies/gated", adminTok, gatedPolicyTOML); r.status != 200 {
		t.Fatalf("policy: %d %s", r.status, r.body)
	}
	id := ts.createSession(map[string]any{"goal": "say hello", "agent_loop": false, "policy": "gated"})
	result := make(chan map[string]any, 1)
	go func() {
		result <- ts.intent(id, `{"action":"run_command","params":{"command":"echo hello"},"justification":"greet the operator"}`)
	}()
	var gate map[string]any
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		p := ts.call("GET", "/api/approvals/"+id+"/pending", auditorTok, nil).json(t)
		if g, ok := p["pending"].(map[string]any); ok {
			gate = g
			break
		}
	}
	if gate == nil || gate["action_name"] != "run_command" || gate["gate_id"] == nil || gate["created_at"] == nil {
		t.Fatalf("pending gate %v", gate)
	}
	body := map[string]any{"gate_id": gate["gate_id"], "approved": true, "reason": "looks harmless"}
	for _, tok := range []string{auditorTok, agentTok} {
		ts.wantStatus(t, "non-admin decision", 403, "POST", "/api/approvals/"+id, tok, body)
	}
	ts.wantStatus(t, "unknown gate", 404, "POST", "/api/approvals/"+id, adminTok, map[string]any{"gate_id": someID, "approved": true})
	ts.wantStatus(t, "bad gate id", 400, "POST", "/api/approvals/"+id, adminTok, map[string]any{"gate_id": "nope", "approved": true})
	ts.wantStatus(t, "approved as a string", 422, "POST", "/api/approvals/"+id, adminTok, map[string]any{"gate_id": gate["gate_id"], "approved": "yes"})
	if r := ts.call("POST", "/api/approvals/"+id, adminTok, body); r.status != 200 || string(r.body) != `{"ok":true}` {
		t.Fatalf("decision: %d %s", r.status, r.body)
	}
	ts.wantStatus(t, "second decision", 409, "POST", "/api/approvals/"+id, adminTok, body)
	var res map[string]any
	select {
	case res = <-result:
	case <-time.After(10 * time.Second):
		t.Fatal("the intent did not finish after the decision")
	}
	if res["verdict"] != "allow" || res["executed"] != true {
		t.Errorf("approved intent: %v", res)
	}
	for _, e := range ts.events(id) {
		p := e["payload"].(map[string]any)
		if p["type"] == "approval_decision" {
			if p["approved"] != true || p["decided_by"] != "operator:api:"+labelObserver || p["reason"] != "operator:api:"+labelObserver+": looks harmless" {
				t.Errorf("approval_decision %v", p)
			}
		}
	}

	// A seal decides a pending gate as denied, "session sealed".
	go func() {
		result <- ts.intent(id, `{"action":"run_command","params":{"command":"echo again"},"justification":"greet once more"}`)
	}()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if p := ts.call("GET", "/api/approvals/"+id+"/pending", adminTok, nil).json(t); p["pending"] != nil {
			break
		}
	}
	seal := ts.call("POST", "/api/sessions/"+id+"/seal", agentTok, nil)
	if seal.status != 200 || seal.json(t)["already_sealed"] != false {
		t.Fatalf("seal: %d %s", seal.status, seal.body)
	}
	res = <-result
	if res["verdict"] != "deny" || res["check"] != "approval" {
		t.Errorf("intent cancelled by the seal: %v", res)
	}
	evs := ts.events(id)
	last := evs[len(evs)-1]["payload"].(map[string]any)
	if last["type"] != "session_sealed" {
		t.Errorf("last event %v", last["type"])
	}
	for _, e := range evs {
		p := e["payload"].(map[string]any)
		if p["type"] == "approval_decision" && p["approved"] == false && p["reason"] != "session sealed" {
			t.Errorf("seal decision %v", p)
		}
	}
	ts.wantStatus(t, "decision on a sealed session", 409, "POST", "/api/approvals/"+id, adminTok, body)
}

// slowScript is a mock script whose replies take delay each: a loop that is
// still running when the test acts.
func slowScript(t *testing.T, n int, delay time.Duration) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		content, _ := json.Marshal(fmt.Sprintf(`{"action":"run_command","params":{"command":"echo step %d"},"justification":"report progress"}`, i))
		fmt.Fprintf(&b, `{"role":"agent","content":%s,"delay_ms":%d}`+"\n", content, delay.Milliseconds())
	}
	p := filepath.Join(t.TempDir(), "script.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSealRunningLoop: sealing a running loop session stops it between
// steps; status completed, and nothing follows session_sealed.
func TestSealRunningLoop(t *testing.T) {
	ts := startServer(t, tsOptions{env: map[string]string{"MOCK_LLM_SCRIPT": slowScript(t, 50, 150*time.Millisecond), "AGENT_MAX_STEPS": "50"}})
	id := ts.createSession(map[string]any{"goal": "report progress"})
	time.Sleep(500 * time.Millisecond)
	r := ts.call("POST", "/api/sessions/"+id+"/seal", adminTok, nil)
	m := r.json(t)
	if r.status != 200 || m["already_sealed"] != false || m["status"] != "completed" {
		t.Fatalf("seal: %d %s", r.status, r.body)
	}
	time.Sleep(700 * time.Millisecond)
	evs := ts.events(id)
	if last := evs[len(evs)-1]["payload"].(map[string]any); last["type"] != "session_sealed" || last["status"] != "completed" {
		t.Errorf("last event %v", last)
	}
	if v := ts.call("GET", "/api/sessions/"+id+"/verify", adminTok, nil).json(t); v["ok"] != true {
		t.Errorf("verify: %v", v)
	}
}

// TestShutdownRecordsEnd: a graceful shutdown stops the running sessions
// and records their end (aborted, halt_interrupted), then checkpoints.
func TestShutdownRecordsEnd(t *testing.T) {
	dataDir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "<unset>", "MOCK_LLM_SCRIPT": slowScript(t, 50, 200*time.Millisecond), "AGENT_MAX_STEPS": "50"}
	opts, _, _ := newOptions(t, tsOptions{dataDir: dataDir, env: env})
	ts := startOpts(t, opts)
	srv := ts.Server
	loop := ts.createSession(map[string]any{"goal": "report progress"})
	ext := ts.createSession(map[string]any{"goal": "wait for intents", "agent_loop": false})
	stream := ts.openStream("/api/stream", adminTok)
	time.Sleep(400 * time.Millisecond)
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stream.done:
	case <-time.After(5 * time.Second):
		t.Error("the stream did not end at shutdown")
	}
	// Reopen the same ledger file and look.
	ts2 := startOpts(t, opts)
	defer ts2.Shutdown(context.Background())
	for _, id := range []string{loop, ext} {
		s := ts2.call("GET", "/api/sessions/"+id, adminTok, nil).json(t)
		evs := ts2.events(id)
		var halted bool
		for _, e := range evs {
			p := e["payload"].(map[string]any)
			halted = halted || (p["type"] == "session_halted" && p["code"] == "halt_interrupted")
		}
		if s["status"] != "aborted" || !halted {
			t.Errorf("session %s after shutdown: %v, halted=%v, %v", id, s["status"], halted, payloadTypes(evs))
		}
		if v := ts2.call("GET", "/api/sessions/"+id+"/verify", adminTok, nil).json(t); v["ok"] != true {
			t.Errorf("verify %s: %v", id, v)
		}
	}
}

// TestWebhookDelivery: a webhook registered through the API receives the
// denials this instance commits, redacted, with its own bearer token.
func TestWebhookDelivery(t *testing.T) {
	got := make(chan map[string]any, 10)
	auth := make(chan string, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		auth <- r.Header.Get("Authorization")
		got <- m
	}))
	defer recv.Close()
	ts := startServer(t, tsOptions{env: map[string]string{"WEBHOOK_ALLOW_PRIVATE_TARGETS": "true"}})
	r := ts.call("POST", "/api/webhooks", adminTok, map[string]any{"label": "local SIEM", "url": recv.URL, "bearer_token": "siem-secret", "filter_kinds": []string{"tripwire_rejection"}})
	if r.status != 201 {
		t.Fatalf("webhook: %d %s", r.status, r.body)
	}
	id := ts.createSession(map[string]any{"goal": "inspect", "agent_loop": false})
	res := ts.intent(id, `{"action":"run_command","params":{"command":"sudo cat /etc/shadow password=hunter2"},"justification":"look at the password hashes"}`)
	if res["check"] != "tripwire" {
		t.Fatalf("intent: %v", res)
	}
	select {
	case m := <-got:
		b, _ := json.Marshal(m)
		if !strings.Contains(string(b), id) || strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), "tripwire") {
			t.Errorf("delivery %s", b)
		}
		if a := <-auth; a != "Bearer siem-secret" {
			t.Errorf("Authorization %q", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery")
	}
}
