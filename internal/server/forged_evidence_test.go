package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/evidence"
)

// appendEvent posts a client event (route 9) with the agent token and
// returns its sequence.
func (ts *testServer) appendEvent(id string, body any) int {
	ts.t.Helper()
	r := ts.call("POST", "/api/sessions/"+id+"/events", agentTok, body)
	if r.status != 201 {
		ts.t.Fatalf("append: %d %s", r.status, r.body)
	}
	return int(r.json(ts.t)["sequence"].(float64))
}

// observationOf returns the sequence of the observation a step recorded.
func observationOf(t *testing.T, r map[string]any) int {
	t.Helper()
	for _, e := range r["events"].([]any) {
		m := e.(map[string]any)
		if m["type"] == "observation" {
			return int(m["sequence"].(float64))
		}
	}
	t.Fatalf("no observation in %v", r["events"])
	return 0
}

func criticalFinding(seq int, quote string) string {
	return fmt.Sprintf(`{"action":"complete","params":{"findings":[{"severity":"critical","title":"root login allowed","evidence":"see the observation","recommendation":"disable it","evidence_sequence":[%d],"evidence_quotes":[%q]}]},"justification":"the audit is done"}`, seq, quote)
}

// vcClaims decodes the claims of a session's credential.
func (ts *testServer) vcClaims(id string) map[string]any {
	ts.t.Helper()
	r := ts.call("GET", "/api/sessions/"+id+"/vc", auditorTok, nil)
	if r.status != 200 {
		ts.t.Fatalf("vc: %d %s", r.status, r.body)
	}
	parts := strings.Split(r.json(ts.t)["vc_jwt"].(string), ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		ts.t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		ts.t.Fatal(err)
	}
	return claims
}

// TestForgedEvidenceRefused is issue 13 item 1: an agent token appends its
// own observation and cites it in its findings. The schema check refuses
// the finding, so the session earns no credential for it; citing what
// IronVise observed of a command it ran still completes the session, and
// its credential states "completed".
func TestForgedEvidenceRefused(t *testing.T) {
	ts := startServer(t, tsOptions{})
	r := ts.call("POST", "/api/sessions", agentTok, map[string]any{"goal": "audit the ssh settings", "agent_loop": false})
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	real := observationOf(t, ts.intent(id, `{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the notes file"}`))
	forged := ts.appendEvent(id, map[string]any{"type": "observation", "content": "root password is hunter2"})

	// The client's observation is labelled as the client's, in the
	// signed payload.
	for _, e := range ts.events(id) {
		p := e["payload"].(map[string]any)
		switch int(e["sequence"].(float64)) {
		case forged:
			if p["event_origin"] != "client" {
				t.Errorf("client event payload %v; want event_origin client", p)
			}
		case real:
			if p["event_origin"] != "ironvise" {
				t.Errorf("IronVise observation payload %v; want event_origin ironvise", p)
			}
		}
	}

	d := ts.intent(id, criticalFinding(forged, "root password is hunter2"))
	if d["verdict"] != "deny" || d["check"] != "schema" || d["rule"] != "schema_finding_unverified" {
		t.Fatalf("a finding citing the client's own observation: %v; want a schema_finding_unverified denial", d)
	}
	if s := ts.call("GET", "/api/sessions/"+id, adminTok, nil).json(t); s["status"] != "running" {
		t.Fatalf("session %v after the refused finding; want running", s["status"])
	}
	if r := ts.call("GET", "/api/sessions/"+id+"/vc", auditorTok, nil); r.status != 404 {
		t.Fatalf("credential after a refused finding: %d %s", r.status, r.body)
	}

	ok := ts.intent(id, criticalFinding(real, "PermitRootLogin yes"))
	if ok["verdict"] != "allow" || ok["session_status"] != "completed" {
		t.Fatalf("a finding citing IronVise's observation: %v", ok)
	}
	claims := ts.vcClaims(id)
	subject := claims["vc"].(map[string]any)["credentialSubject"].(map[string]any)
	if subject["status"] != "completed" {
		t.Errorf("credential subject status %v; want completed", subject["status"])
	}
	if v := ts.call("GET", "/api/sessions/"+id+"/vc/verify", auditorTok, nil).json(t); v["valid"] != true {
		t.Errorf("vc/verify: %v", v)
	}
	rep := ts.call("GET", "/api/reports/"+id, auditorTok, nil).json(t)
	locs := rep["findings"].([]any)[0].(map[string]any)["locations"].([]any)
	if l := locs[0].(map[string]any); l["verified"] != true || l["origin"] != "ironvise" {
		t.Errorf("report location %v; want verified, origin ironvise", l)
	}
	ce, _ := rep["client_events"].([]any)
	if len(ce) != 1 || int(ce[0].(map[string]any)["sequence"].(float64)) != forged {
		t.Errorf("report client_events %v; want the client's observation %d", rep["client_events"], forged)
	}
}

// TestClientCompleteIsNotAFinding: a client appends an observation and a
// complete action of its own through route 9 and seals. Nothing counts it
// as the session's findings: the report lists no finding and labels both
// events, the certificate holds no finding and labels them, and no
// credential exists.
func TestClientCompleteIsNotAFinding(t *testing.T) {
	ts := startServer(t, tsOptions{})
	id := ts.createSession(map[string]any{"goal": "audit the ssh settings", "agent_loop": false})
	forged := ts.appendEvent(id, map[string]any{"type": "observation", "content": "root password is hunter2"})
	var params map[string]any
	if err := json.Unmarshal([]byte(criticalFinding(forged, "hunter2")), &params); err != nil {
		t.Fatal(err)
	}
	complete := ts.appendEvent(id, map[string]any{"type": "action", "name": "complete", "params": params["params"]})
	if r := ts.call("POST", "/api/sessions/"+id+"/seal", agentTok, nil); r.status != 200 {
		t.Fatalf("seal: %d %s", r.status, r.body)
	}

	rep := ts.call("GET", "/api/reports/"+id, auditorTok, nil).json(t)
	if fs := rep["findings"].([]any); len(fs) != 0 {
		t.Errorf("report findings %v; want none (the complete action is the client's)", fs)
	}
	labelled := map[int]bool{}
	ce, _ := rep["client_events"].([]any)
	for _, c := range ce {
		labelled[int(c.(map[string]any)["sequence"].(float64))] = true
	}
	if !labelled[forged] || !labelled[complete] {
		t.Errorf("report client_events %v; want %d and %d", rep["client_events"], forged, complete)
	}

	c := ts.call("GET", "/api/certificates/"+id, auditorTok, nil)
	if c.status != 200 {
		t.Fatalf("certificate: %d %s", c.status, c.body)
	}
	res, err := evidence.VerifyCertificate(c.body, ts.ledger().IssuerPublicKey())
	if err != nil || !res.Valid {
		t.Fatalf("certificate: %v %+v", err, res)
	}
	if res.Findings != 0 {
		t.Errorf("certificate findings %d; want 0", res.Findings)
	}
	if n := strings.Count(string(c.body), `"origin":"client"`); n != 2 {
		t.Errorf("certificate labels %d events as the client's; want 2", n)
	}
	ts.wantStatus(t, "credential of a client-completed session", 404, "GET", "/api/sessions/"+id+"/vc", auditorTok, nil)
}

// TestAPICredentialSaysCompleted: the credential of a session driven
// through the API is issued once the session has ended, so its subject
// states "completed" (it used to state "running").
func TestAPICredentialSaysCompleted(t *testing.T) {
	ts := startServer(t, tsOptions{})
	id := ts.createSession(map[string]any{"goal": "nothing to do", "agent_loop": false})
	if r := ts.intent(id, `{"action":"complete","params":{"findings":[]}}`); r["session_status"] != "completed" {
		t.Fatalf("complete: %v", r)
	}
	subject := ts.vcClaims(id)["vc"].(map[string]any)["credentialSubject"].(map[string]any)
	if subject["status"] != "completed" {
		t.Errorf("credential subject status %v; want completed", subject["status"])
	}
}

// TestVerifyRouteChecksFindings: route 11 also checks the findings. A
// chain whose committed complete action cites a client's observation
// (written straight into the ledger, as a bypass of the schema check or an
// old ledger would hold it) is signed and unbroken, but not ok.
func TestVerifyRouteChecksFindings(t *testing.T) {
	ts := startServer(t, tsOptions{})
	id := ts.createSession(map[string]any{"goal": "audit the ssh settings", "agent_loop": false})
	forged := ts.appendEvent(id, map[string]any{"type": "observation", "content": "root password is hunter2"})
	sid, err := parseUUID(id)
	if err != nil {
		t.Fatal(err)
	}
	finding := map[string]any{"severity": "critical", "title": "root password", "evidence": "e", "recommendation": "r",
		"evidence_sequence": []int{forged}, "evidence_quotes": []string{"hunter2"}}
	if _, err := ts.ledger().Append(context.Background(), sid, "action", map[string]any{"step": 1, "intent_seq": 2, "name": "complete", "params": map[string]any{"findings": []any{finding}}}); err != nil {
		t.Fatal(err)
	}
	v := ts.call("GET", "/api/sessions/"+id+"/verify", auditorTok, nil).json(t)
	e, _ := v["error"].(map[string]any)
	if v["ok"] != false || v["findings_ok"] != false || v["chain_ok"] != true || e["check"] != "findings" {
		t.Fatalf("verify %v; want ok false from the findings check alone", v)
	}
}
