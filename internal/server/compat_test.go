package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCompatibilityChecklist runs the checklist of
// docs/design/api.md#compatibility-checklist against a real server on
// loopback configured as item 50 says: the mock LLM, no guard, very high rate
// limits, no network. Items covered elsewhere name their test.
func TestCompatibilityChecklist(t *testing.T) {
	ts := startServer(t, tsOptions{})
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	hex128 := regexp.MustCompile(`^[0-9a-f]{128}$`)
	uuidRe := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	ext := func() string {
		return ts.createSession(map[string]any{"goal": "inspect the notes", "agent_loop": false})
	}

	t.Run("01 healthz and unknown paths need no token", func(t *testing.T) {
		if r := ts.call("GET", "/healthz", "", nil); r.status != 200 || string(r.body) != `{"status":"ok"}` {
			t.Errorf("healthz: %d %s", r.status, r.body)
		}
		ts.wantStatus(t, "unknown", 404, "GET", "/no/such/path", "", nil)
	})
	t.Run("02 header or query token", func(t *testing.T) {
		ts.wantStatus(t, "bearer", 200, "GET", "/api/sessions", adminTok, nil)
		ts.wantStatus(t, "query", 200, "GET", "/api/sessions?token="+adminTok, "", nil)
	})
	t.Run("03 missing and unknown tokens", func(t *testing.T) {
		ts.wantStatus(t, "none", 401, "GET", "/api/sessions", "", nil)
		ts.wantStatus(t, "unknown", 401, "GET", "/api/sessions", "totally-invalid-token-deadbeef", nil)
	})
	t.Run("04 401 before body checks", func(t *testing.T) {
		ts.wantStatus(t, "create", 401, "POST", "/api/sessions", "", map[string]any{"goal": "x"})
		ts.wantStatus(t, "tripwire", 401, "PUT", "/api/tripwire", "", map[string]any{"require_https": true})
	})
	t.Run("05 role refusals", func(t *testing.T) {
		cases := []struct {
			method, path, tok string
			body              any
			headers           []string
		}{
			{"POST", "/api/sessions", auditorTok, map[string]any{"goal": "x"}, nil},
			{"PUT", "/api/policies/mine", agentTok, "name = \"mine\"\n", nil},
			{"POST", "/api/tokens", agentTok, map[string]any{"role": "agent"}, nil},
			{"GET", "/api/config", agentTok, nil, nil},
			{"PUT", "/api/tripwire", agentTok, map[string]any{"require_https": true}, nil},
			{"GET", "/metrics", agentTok, nil, nil},
			{"POST", "/api/approvals/" + someID, agentTok, map[string]any{"gate_id": someID, "approved": true}, nil},
		}
		for _, c := range cases {
			if r := ts.call(c.method, c.path, c.tok, c.body, c.headers...); r.status != 403 {
				t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
			}
		}
	})
	t.Run("06 auditor reads", func(t *testing.T) {
		c := ts.openStream("/api/stream", auditorTok)
		if c.res.StatusCode != 200 {
			t.Fatalf("stream: %d", c.res.StatusCode)
		}
		if _, ok := c.next(t, 500*time.Millisecond); ok {
			t.Log("stream delivered a frame (fine)")
		}
		select {
		case <-c.done:
			t.Error("the auditor's stream closed")
		default:
		}
		ts.wantStatus(t, "events", 200, "GET", "/api/events?session_id="+ext(), auditorTok, nil)
	})
	t.Run("07 create answers 200 with a Session", func(t *testing.T) {
		goal := "Check the TLS settings"
		r := ts.call("POST", "/api/sessions", adminTok, map[string]any{"goal": goal})
		s := r.json(t)
		sum := sha256.Sum256([]byte(goal))
		if r.status != 200 || !uuidRe.MatchString(s["id"].(string)) || s["goal_hash"] != hex.EncodeToString(sum[:]) {
			t.Errorf("%d %v", r.status, s)
		}
		switch s["status"] {
		case "running", "completed", "failed", "aborted":
		default:
			t.Errorf("status %v", s["status"])
		}
		for _, k := range []string{"id", "goal", "goal_hash", "status", "llm_backend", "llm_model", "created_at", "finished_at", "policy_hash",
			"session_public_key", "session_did", "enclave_attestation_json", "sealed", "sealed_at", "event_count", "agent_loop"} {
			if _, ok := s[k]; !ok {
				t.Errorf("key %s missing", k)
			}
		}
	})
	t.Run("08 goal rules", func(t *testing.T) {
		for _, g := range []string{"", "   \t\n"} {
			if r := ts.call("POST", "/api/sessions", adminTok, map[string]any{"goal": g}); r.status != 400 {
				t.Errorf("goal %q: %d", g, r.status)
			}
		}
		ts.wantStatus(t, "{}", 422, "POST", "/api/sessions", adminTok, map[string]any{})
		r := ts.call("POST", "/api/sessions", adminTok, map[string]any{"goal": "x y z", "foo": "bar", "baz": 42, "session_did": "did:key:z6Mk"})
		if r.status != 200 || r.json(t)["id"] == nil {
			t.Errorf("extra fields: %d %s", r.status, r.body)
		}
	})
	t.Run("09 goal sizes and scripts", func(t *testing.T) {
		ts.wantStatus(t, "500 000 characters", 200, "POST", "/api/sessions", adminTok, map[string]any{"goal": strings.Repeat("a", 500000), "agent_loop": false})
		ts.wantStatus(t, "mixed scripts", 200, "POST", "/api/sessions", adminTok, map[string]any{"goal": "Prüfe die Konfiguration — 检查配置 — проверь 🔐🛡️"})
		ts.wantStatus(t, "NUL", 400, "POST", "/api/sessions", adminTok, map[string]any{"goal": "a\x00b"})
		ts.wantStatus(t, "over 1 MiB", 413, "POST", "/api/sessions", adminTok, map[string]any{"goal": strings.Repeat("a", MaxBodyBytes)})
	})
	t.Run("10 content types", func(t *testing.T) {
		ts.wantStatus(t, "no body", 415, "POST", "/api/sessions", adminTok, nil)
		ts.wantStatus(t, "xml", 415, "POST", "/api/sessions", adminTok, `{"goal":"x"}`, "Content-Type", "text/xml")
		ts.wantStatus(t, "broken", 400, "POST", "/api/sessions", adminTok, `{broken json`, "Content-Type", "application/json")
	})
	t.Run("11 status filter", func(t *testing.T) {
		ext()
		r := ts.call("GET", "/api/sessions?status=running&limit=500", adminTok, nil)
		for _, s := range r.list(t) {
			if s["status"] != "running" {
				t.Errorf("status filter returned %v", s["status"])
			}
		}
		for _, st := range []string{"bogus", "running' OR '1'='1", "running;DROP TABLE sessions"} {
			r := ts.call("GET", "/api/sessions?status="+urlq(st), adminTok, nil)
			if r.status != 200 || string(r.body) != "[]" {
				t.Errorf("status %q: %d %s", st, r.status, r.body)
			}
		}
		if r := ts.call("GET", "/api/sessions", adminTok, nil); r.status != 200 || len(r.list(t)) == 0 {
			t.Errorf("later listing: %d", r.status)
		}
	})
	t.Run("12 limit and offset", func(t *testing.T) {
		for i := 0; i < 11; i++ {
			ext()
		}
		n := func(q string) int {
			r := ts.call("GET", "/api/sessions?"+q, adminTok, nil)
			if r.status != 200 {
				t.Fatalf("%s: %d", q, r.status)
			}
			return len(r.list(t))
		}
		if n("limit=1") > 1 || n("limit=0") > 1 || n("limit=9999") > 500 || n("offset=999999") != 0 {
			t.Error("limit clamping")
		}
		ts.wantStatus(t, "offset -1", 200, "GET", "/api/sessions?offset=-1", adminTok, nil)
		ts.wantStatus(t, "limit=ten", 400, "GET", "/api/sessions?limit=ten", adminTok, nil)
		a := ts.call("GET", "/api/sessions?limit=5&offset=0", adminTok, nil).list(t)
		b := ts.call("GET", "/api/sessions?limit=5&offset=5", adminTok, nil).list(t)
		for _, x := range a {
			for _, y := range b {
				if x["id"] == y["id"] {
					t.Errorf("pages overlap on %v", x["id"])
				}
			}
		}
	})
	t.Run("13 lookup", func(t *testing.T) {
		id := ext()
		if r := ts.call("GET", "/api/sessions/"+id, adminTok, nil); r.status != 200 || r.json(t)["id"] != id {
			t.Errorf("created: %d", r.status)
		}
		if r := ts.call("GET", "/api/sessions/"+strings.ToUpper(id), adminTok, nil); r.status != 200 || r.json(t)["id"] != id {
			t.Errorf("upper case id: %d", r.status)
		}
		ts.wantStatus(t, "random", 404, "GET", "/api/sessions/"+someID, adminTok, nil)
		ts.wantStatus(t, "not-a-uuid", 400, "GET", "/api/sessions/not-a-uuid", adminTok, nil)
		ts.wantStatus(t, "32-hex form", 400, "GET", "/api/sessions/"+strings.ReplaceAll(id, "-", ""), adminTok, nil)
	})
	t.Run("14 events query", func(t *testing.T) {
		ts.wantStatus(t, "missing", 400, "GET", "/api/events", adminTok, nil)
		ts.wantStatus(t, "abc", 400, "GET", "/api/events?session_id=abc", adminTok, nil)
		if r := ts.call("GET", "/api/events?session_id="+someID, adminTok, nil); r.status != 200 || string(r.body) != "[]" {
			t.Errorf("random: %d %s", r.status, r.body)
		}
	})
	t.Run("15 16 a new session's chain", func(t *testing.T) {
		id := ts.createSession(map[string]any{"goal": "inspect"})
		evs := ts.call("GET", "/api/events?session_id="+id, adminTok, nil).list(t)
		if len(evs) < 2 {
			t.Fatalf("%d events", len(evs))
		}
		for i, e := range evs {
			if int(e["sequence"].(float64)) != i {
				t.Errorf("sequence %v at %d", e["sequence"], i)
			}
			p := e["payload"].(map[string]any)
			if i == 0 && (p["type"] != "genesis" || !hex64.MatchString(e["previous_hash"].(string))) {
				t.Errorf("first event %v", e)
			}
			if i > 0 && e["previous_hash"] != evs[i-1]["content_hash"] {
				t.Errorf("link broken at %d", i)
			}
			if !hex64.MatchString(e["public_key"].(string)) || !hex128.MatchString(e["signature"].(string)) || !hex64.MatchString(e["content_hash"].(string)) {
				t.Errorf("key or signature at %d: %v", i, e)
			}
			if _, ok := e["id"].(float64); !ok || e["session_id"] != id || p["type"] == nil {
				t.Errorf("shape at %d: %v", i, e)
			}
			if _, err := time.Parse(time.RFC3339, e["created_at"].(string)); err != nil || !regexp.MustCompile(`\.\d{6}Z$`).MatchString(e["created_at"].(string)) {
				t.Errorf("created_at %v", e["created_at"])
			}
		}
		if p := evs[1]["payload"].(map[string]any); p["type"] != "prompt_input" || p["content"] != "inspect" {
			t.Errorf("sequence 1: %v", p)
		}
	})
	t.Run("17 verify", func(t *testing.T) {
		id := ext()
		r := ts.call("GET", "/api/sessions/"+id+"/verify", adminTok, nil)
		v := r.json(t)
		if r.status != 200 || v["ok"] != true || v["chain_ok"] != true || v["signatures_ok"] != true || v["goal_ok"] != true || v["log_ok"] != true || v["seal_ok"] != true || v["error"] != nil {
			t.Errorf("%d %v", r.status, v)
		}
	})
	t.Run("18 19 concurrent appends", func(t *testing.T) {
		id := ext()
		var wg sync.WaitGroup
		for i := 0; i < 5; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				r := ts.call("POST", "/api/sessions/"+id+"/events", adminTok, map[string]any{"type": "observation", "content": fmt.Sprintf("note %d", i)})
				m := r.json(t)
				_, idOK := m["id"].(float64)
				_, seqOK := m["sequence"].(float64)
				if r.status != 201 || !idOK || !seqOK || !hex64.MatchString(fmt.Sprint(m["payload_hash"])) {
					t.Errorf("append %d: %d %s", i, r.status, r.body)
				}
			}(i)
		}
		wg.Wait()
		evs := ts.call("GET", "/api/events?session_id="+id, adminTok, nil).list(t)
		for i, e := range evs {
			if int(e["sequence"].(float64)) != i || (i > 0 && e["previous_hash"] != evs[i-1]["content_hash"]) {
				t.Errorf("chain broken at %d", i)
			}
		}
		if v := ts.call("GET", "/api/sessions/"+id+"/verify", adminTok, nil).json(t); v["ok"] != true {
			t.Errorf("verify after appends: %v", v)
		}
	})
	t.Run("20 seal", func(t *testing.T) {
		for _, body := range []any{nil, map[string]any{}} {
			id := ext()
			r := ts.call("POST", "/api/sessions/"+id+"/seal", adminTok, body)
			m := r.json(t)
			if r.status != 200 || m["already_sealed"] != false || m["status"] != "completed" {
				t.Errorf("seal: %d %s", r.status, r.body)
			}
			r = ts.call("POST", "/api/sessions/"+id+"/seal", adminTok, body)
			if r.status != 200 || r.json(t)["already_sealed"] != true {
				t.Errorf("seal twice: %d %s", r.status, r.body)
			}
			s := ts.call("GET", "/api/sessions/"+id, adminTok, nil).json(t)
			if s["status"] != "completed" || s["sealed"] != true {
				t.Errorf("after seal: %v", s)
			}
			ts.wantStatus(t, "append after seal", 409, "POST", "/api/sessions/"+id+"/events", adminTok, map[string]any{"type": "thought", "content": "late"})
		}
	})
	t.Run("21 compliance", func(t *testing.T) {
		id := ext()
		var c struct {
			SessionID   string           `json:"session_id"`
			Events      []map[string]any `json:"events"`
			PolicyHash  *string          `json:"policy_hash"`
			GeneratedAt string           `json:"generated_at"`
		}
		r := ts.call("GET", "/api/sessions/"+id+"/compliance", adminTok, nil)
		if err := json.Unmarshal(r.body, &c); err != nil || r.status != 200 || c.SessionID != id || len(c.Events) < 2 || c.GeneratedAt == "" {
			t.Errorf("%d %s", r.status, r.body)
		}
		if c.Events[0]["payload_hash"] != c.Events[0]["content_hash"] {
			t.Error("payload_hash must repeat content_hash")
		}
	})
	t.Run("22 credentials of mock sessions", func(t *testing.T) {
		id := ts.createSession(map[string]any{"goal": "inspect the notes"})
		s := ts.waitEnded(id, 5*time.Second)
		vc := ts.call("GET", "/api/sessions/"+id+"/vc", adminTok, nil)
		vv := ts.call("GET", "/api/sessions/"+id+"/vc/verify", adminTok, nil)
		if s["status"] == "completed" {
			if vc.status != 200 || vc.json(t)["vc_jwt"] == nil || vv.status != 200 || vv.json(t)["valid"] == nil {
				t.Errorf("completed: vc %d, verify %d", vc.status, vv.status)
			}
		} else if vc.status != 404 || vv.status != 404 {
			t.Errorf("%s session: vc %d, verify %d; want 404", s["status"], vc.status, vv.status)
		}
		for _, p := range []string{"/vc", "/vc/verify"} {
			if r := ts.call("GET", "/api/sessions/"+someID+p, adminTok, nil); r.status != 404 {
				t.Errorf("random %s: %d", p, r.status)
			}
		}
	})
	// 23: TestEvidenceRoutes. 24–28: TestStreamChecklist and TestKeepAlive.
	t.Run("29 policies listed", func(t *testing.T) {
		r := ts.call("GET", "/api/policies", adminTok, nil)
		var names []string
		json.Unmarshal(r.body, &names)
		if !sort.StringsAreSorted(names) {
			t.Errorf("not sorted: %v", names)
		}
		for _, p := range []string{"iso42001", "owasp-top10", "pci-dss-audit", "soc2-audit"} {
			if !contains(names, p) {
				t.Errorf("%s missing from %v", p, names)
			}
			if g := ts.call("GET", "/api/policies/"+p, adminTok, nil); g.status != 200 || len(g.body) == 0 || g.header.Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("GET %s: %d", p, g.status)
			}
		}
		ts.wantStatus(t, "unknown", 404, "GET", "/api/policies/no-such-policy", adminTok, nil)
	})
	t.Run("30 policy lifecycle", func(t *testing.T) {
		toml := "name = \"team-audit\"\nversion = \"1\"\nallowed_actions = [\"read_file\", \"complete\"]\n"
		for _, ct := range []string{"", "text/plain; charset=utf-8", "application/octet-stream"} {
			var h []string
			if ct != "" {
				h = []string{"Content-Type", ct}
			}
			r := ts.call("PUT", "/api/policies/team-audit", adminTok, toml, h...)
			if r.status != 200 || r.json(t)["name"] != "team-audit" || !hex64.MatchString(fmt.Sprint(r.json(t)["policy_hash"])) {
				t.Errorf("PUT (%q): %d %s", ct, r.status, r.body)
			}
		}
		if g := ts.call("GET", "/api/policies/team-audit", adminTok, nil); string(g.body) != toml {
			t.Errorf("GET after PUT: %q", g.body)
		}
		if d := ts.call("DELETE", "/api/policies/team-audit", adminTok, nil); d.status != 200 || string(d.body) != `{"ok":true}` {
			t.Errorf("DELETE: %d %s", d.status, d.body)
		}
		if g := ts.call("GET", "/api/policies/team-audit", adminTok, nil); g.status != 404 {
			t.Errorf("GET after DELETE: %d", g.status)
		}
		ts.wantStatus(t, "invalid TOML", 422, "PUT", "/api/policies/broken", adminTok, "name = = nope")
		ts.wantStatus(t, "invalid policy", 422, "PUT", "/api/policies/wrong-keys", adminTok, "name = \"x\"\nno_such_key = 1\n")
		ts.wantStatus(t, "built-in PUT", 403, "PUT", "/api/policies/soc2-audit", adminTok, toml)
		ts.wantStatus(t, "built-in DELETE", 403, "DELETE", "/api/policies/soc2-audit", adminTok, nil)
		ts.wantStatus(t, "missing DELETE", 404, "DELETE", "/api/policies/never-there", adminTok, nil)
		ts.wantStatus(t, "200-character name", 400, "PUT", "/api/policies/"+strings.Repeat("p", 200), adminTok, toml)
	})
	t.Run("31 traversal names", func(t *testing.T) {
		for _, n := range []string{"../../etc/passwd", "../sneaky", "foo/../bar", `foo\bar`, "..%2F..%2Fetc%2Fpasswd", "%2e%2e%2fsneaky", "foo%2F..%2Fbar", "foo%5Cbar"} {
			code, _, _ := rawRequest(t, ts.Addr(), "GET", "/api/policies/"+n, adminTok)
			if code != 400 && code != 404 {
				t.Errorf("%s: %d", n, code)
			}
		}
	})
	t.Run("32 approvals of a new session", func(t *testing.T) {
		id := ext()
		if r := ts.call("GET", "/api/approvals/"+id+"/pending", adminTok, nil); r.status != 200 || string(r.body) != `{"pending":null}` {
			t.Errorf("pending: %d %s", r.status, r.body)
		}
		ts.wantStatus(t, "without gate_id", 422, "POST", "/api/approvals/"+id, adminTok, map[string]any{"approved": true})
	})
	t.Run("33 34 tokens", func(t *testing.T) {
		r := ts.call("POST", "/api/tokens", adminTok, map[string]any{"role": "admin", "label": "ci", "expires_in_days": 7})
		m := r.json(t)
		tok, _ := m["token"].(string)
		if r.status != 200 || len(tok) != 64 || m["token_hash"] != TokenHash(tok) || m["role"] != "admin" || m["label"] != "ci" || m["expires_at"] == nil {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		ts.wantStatus(t, "superadmin", 400, "POST", "/api/tokens", adminTok, map[string]any{"role": "superadmin"})
		ts.wantStatus(t, "{}", 422, "POST", "/api/tokens", adminTok, map[string]any{})
		ts.wantStatus(t, "new token", 200, "GET", "/api/sessions", tok, nil)
		rows := ts.call("GET", "/api/tokens", adminTok, nil)
		if strings.Contains(string(rows.body), `"token"`) || strings.Contains(string(rows.body), tok) || strings.Contains(string(rows.body), adminTok) {
			t.Errorf("token list leaks a token: %s", rows.body)
		}
		for _, row := range rows.list(t) {
			if row["token_hash"] == nil || row["role"] == nil || row["created_at"] == nil {
				t.Errorf("row %v", row)
			}
		}
		d := ts.call("DELETE", "/api/tokens/"+m["token_hash"].(string), adminTok, nil)
		if d.status != 204 || len(d.body) != 0 {
			t.Errorf("delete: %d %q", d.status, d.body)
		}
		ts.wantStatus(t, "deleted token", 401, "GET", "/api/sessions", tok, nil)
		ts.wantStatus(t, "bad hash", 400, "DELETE", "/api/tokens/xyz", adminTok, nil)
		ts.wantStatus(t, "unknown hash", 404, "DELETE", "/api/tokens/"+strings.Repeat("0", 64), adminTok, nil)
	})
	t.Run("35 36 37 webhooks", func(t *testing.T) {
		r := ts.call("POST", "/api/webhooks", adminTok, map[string]any{"label": "Splunk Test", "url": "https://splunk.example.com/services/collector", "bearer_token": "hec-secret"})
		w := r.json(t)
		if r.status != 201 || w["label"] != "Splunk Test" || w["enabled"] != true || !uuidRe.MatchString(fmt.Sprint(w["id"])) || w["has_bearer_token"] != true {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		if strings.Contains(string(r.body), "hec-secret") {
			t.Error("the bearer token is echoed")
		}
		for _, u := range []string{"file:///etc/passwd", "http://127.0.0.1:8080", "http://169.254.169.254/latest/meta-data", "", "http://localhost/x",
			"http://[::1]/", "http://10.1.2.3/", "http://[::ffff:127.0.0.1]/", "http://user:pw@example.com/", "http://100.64.0.1/", "http://metadata.google.internal/"} {
			if r := ts.call("POST", "/api/webhooks", adminTok, map[string]any{"label": "x", "url": u}); r.status != 400 {
				t.Errorf("url %q: %d %s", u, r.status, r.body)
			}
		}
		ts.wantStatus(t, "xml", 400, "POST", "/api/webhooks", adminTok, map[string]any{"label": "x", "url": "https://siem.example.com", "siem_format": "xml"})
		ts.wantStatus(t, "unknown kind", 400, "POST", "/api/webhooks", adminTok, map[string]any{"label": "x", "url": "https://siem.example.com", "filter_kinds": []string{"everything"}})
		id := w["id"].(string)
		for _, p := range []string{"/api/webhooks/" + id, "/api/webhooks/" + id + "/toggle"} {
			r := ts.call("PUT", p, adminTok, map[string]any{"enabled": false})
			if r.status != 200 || r.json(t)["enabled"] != false {
				t.Errorf("PUT %s: %d %s", p, r.status, r.body)
			}
		}
		if l := ts.call("GET", "/api/webhooks", adminTok, nil); strings.Contains(string(l.body), "hec-secret") || len(l.list(t)) != 1 {
			t.Errorf("list: %s", l.body)
		}
		d := ts.call("DELETE", "/api/webhooks/"+id, adminTok, nil)
		if d.status != 204 || len(d.body) != 0 {
			t.Errorf("delete: %d", d.status)
		}
		ts.wantStatus(t, "delete twice", 404, "DELETE", "/api/webhooks/"+id, adminTok, nil)
	})
	t.Run("38 config", func(t *testing.T) {
		c := ts.call("GET", "/api/config", adminTok, nil).json(t)
		if c["llm_backend"] != "mock" || c["database_url"] == nil || c["evm_enabled"] != false {
			t.Errorf("GET: %v", c)
		}
		r := ts.call("PUT", "/api/config", adminTok, map[string]any{"max_steps": 50, "unknown_key": 1})
		if r.status != 200 || r.json(t)["max_steps"] != float64(50) {
			t.Errorf("PUT: %d %s", r.status, r.body)
		}
		ts.wantStatus(t, "max_steps 5000", 400, "PUT", "/api/config", adminTok, map[string]any{"max_steps": 5000})
		ts.wantStatus(t, "max_steps string", 422, "PUT", "/api/config", adminTok, map[string]any{"max_steps": "many"})
		ts.wantStatus(t, "unknown backend", 400, "PUT", "/api/config", adminTok, map[string]any{"llm_backend": "skynet"})
		b, err := os.ReadFile(filepath.Join(ts.dataDir, "settings.json"))
		if err != nil || !strings.Contains(string(b), `"max_steps": 50`) {
			t.Errorf("settings.json: %s %v", b, err)
		}
	})
	t.Run("39 tripwire", func(t *testing.T) {
		for _, p := range []string{"/api/tripwire", "/api/config/tripwire"} {
			r := ts.call("GET", p, adminTok, nil)
			m := r.json(t)
			for _, k := range []string{"allowed_paths", "allowed_domains", "banned_command_patterns"} {
				if _, ok := m[k].([]any); !ok {
					t.Errorf("GET %s: %s is not an array: %s", p, k, r.body)
				}
			}
		}
		cur := ts.call("GET", "/api/tripwire", adminTok, nil).json(t)
		r := ts.call("PUT", "/api/tripwire", adminTok, map[string]any{"allowed_paths": cur["allowed_paths"], "allowed_domains": cur["allowed_domains"], "banned_command_patterns": cur["banned_command_patterns"]})
		if r.status != 200 {
			t.Errorf("PUT as read: %d %s", r.status, r.body)
		}
	})
	t.Run("40 prometheus", func(t *testing.T) {
		r := ts.call("GET", "/metrics", adminTok, nil, "Accept", "text/plain")
		if r.status != 200 || !strings.Contains(string(r.body), "ectoledger_events_appended_total") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain; version=0.0.4") {
			t.Errorf("text: %d %s", r.status, r.header.Get("Content-Type"))
		}
		h := ts.call("GET", "/metrics", adminTok, nil, "Accept", "text/html,application/xhtml+xml")
		if h.status != 200 || !strings.Contains(string(h.body), "<pre>") || !strings.HasPrefix(h.header.Get("Content-Type"), "text/html") {
			t.Errorf("html: %d", h.status)
		}
	})
	t.Run("41 metrics", func(t *testing.T) {
		m := ts.call("GET", "/api/metrics", adminTok, nil).json(t)
		if _, ok := m["total_sessions"].(float64); !ok {
			t.Errorf("metrics %v", m)
		}
		if _, ok := m["total_events"].(float64); !ok {
			t.Errorf("metrics %v", m)
		}
		var sec struct {
			Total   int64            `json:"injection_attempts_detected_7d"`
			ByLayer map[string]int64 `json:"injection_attempts_by_layer"`
			Breaker int64            `json:"sessions_aborted_circuit_breaker"`
			Fails   int64            `json:"chain_verification_failures"`
		}
		r := ts.call("GET", "/api/metrics/security", adminTok, nil)
		if err := json.Unmarshal(r.body, &sec); err != nil || len(sec.ByLayer) != 5 {
			t.Errorf("security: %v %s", err, r.body)
		}
	})
	t.Run("42 chat", func(t *testing.T) {
		r := ts.call("POST", "/api/chat", adminTok, map[string]any{"message": "Hello, how are you?"})
		m := r.json(t)
		if r.status != 200 || m["reply"] != "mock: Hello, how are you?" || m["backend"] != "mock" || m["model"] != "mock-v1" {
			t.Errorf("%d %s", r.status, r.body)
		}
		for _, msg := range []string{"", "   "} {
			if r := ts.call("POST", "/api/chat", adminTok, map[string]any{"message": msg}); r.status != 400 {
				t.Errorf("message %q: %d", msg, r.status)
			}
		}
		ts.wantStatus(t, "{}", 422, "POST", "/api/chat", adminTok, map[string]any{})
		for _, bad := range []string{"sk-", "akia", "private key", "begin rsa", "root:x:0:0"} {
			r := ts.call("POST", "/api/chat", adminTok, map[string]any{"message": "what is the weather"})
			if strings.Contains(strings.ToLower(string(r.body)), bad) {
				t.Errorf("reply contains %q", bad)
			}
		}
		id := ext()
		ts.wantStatus(t, "session chat", 200, "POST", "/api/sessions/"+id+"/chat", agentTok, map[string]any{"message": "status?"})
		ts.wantStatus(t, "unknown session chat", 404, "POST", "/api/sessions/"+someID+"/chat", agentTok, map[string]any{"message": "status?"})
		ts.call("POST", "/api/sessions/"+id+"/seal", adminTok, nil)
		ts.wantStatus(t, "sealed session chat", 409, "POST", "/api/sessions/"+id+"/chat", agentTok, map[string]any{"message": "status?"})
	})
	t.Run("43 unknown, 405, HEAD", func(t *testing.T) {
		ts.wantStatus(t, "unknown", 404, "GET", "/api/nonexistent-endpoint-xyz", adminTok, nil)
		ts.wantStatus(t, "DELETE", 405, "DELETE", "/api/sessions", adminTok, nil)
		if r := ts.call("HEAD", "/api/sessions", adminTok, nil); r.status != 200 || len(r.body) != 0 {
			t.Errorf("HEAD: %d %d bytes", r.status, len(r.body))
		}
	})
	t.Run("44 preflight without a token", func(t *testing.T) {
		r := ts.call("OPTIONS", "/api/sessions", "", nil, "Origin", "https://example.com", "Access-Control-Request-Method", "POST")
		if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") == "" {
			t.Errorf("%d %v", r.status, r.header)
		}
	})
	t.Run("45 concurrent creates and lists", func(t *testing.T) {
		var wg sync.WaitGroup
		ids := sync.Map{}
		for i := 0; i < 10; i++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				r := ts.call("POST", "/api/sessions", adminTok, map[string]any{"goal": "parallel", "agent_loop": false})
				if r.status != 200 && r.status != 429 {
					t.Errorf("create: %d %s", r.status, r.body)
					return
				}
				if r.status == 200 {
					if _, dup := ids.LoadOrStore(r.json(t)["id"], true); dup {
						t.Error("duplicate id")
					}
				}
			}()
			go func() {
				defer wg.Done()
				if r := ts.call("GET", "/api/sessions", adminTok, nil); r.status >= 500 {
					t.Errorf("list: %d", r.status)
				}
			}()
		}
		wg.Wait()
	})
	// 46: TestRateLimits.
	t.Run("47 status and reset outside demo mode", func(t *testing.T) {
		s := ts.call("GET", "/api/status", "", nil).json(t)
		if s["demo_mode"] != false || s["version"] != "test" || s["api_compat"] != "0.6.3" {
			t.Errorf("status %v", s)
		}
		ts.wantStatus(t, "reset", 403, "POST", "/api/admin/reset-demo", adminTok, nil)
	})
	t.Run("48 bodies", func(t *testing.T) {
		for _, p := range []string{"/api/nope", "/api/sessions/zzz", "/api/events"} {
			r := ts.call("GET", p, adminTok, nil)
			var m map[string]any
			if r.status < 400 || json.Unmarshal(r.body, &m) != nil || m["error"] == nil {
				t.Errorf("%s: %d %s", p, r.status, r.body)
			}
		}
		id := ext()
		for _, c := range []struct{ method, path string }{{"POST", "/api/sessions/" + id + "/seal"}, {"PUT", "/api/config"}} {
			r := ts.call(c.method, c.path, adminTok, map[string]any{})
			if r.status/100 == 2 && !json.Valid(r.body) {
				t.Errorf("%s %s: 2xx without JSON", c.method, c.path)
			}
		}
	})
}

// TestMemoryLedgerLeavesNoFile is checklist item 49.
func TestMemoryLedgerLeavesNoFile(t *testing.T) {
	dataDir := t.TempDir()
	opts, _, _ := newOptions(t, tsOptions{dataDir: dataDir})
	for round := 0; round < 2; round++ {
		srv, err := New(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ts := &testServer{Server: srv, t: t, url: srv.URL()}
		evs := ts.call("GET", "/api/metrics", adminTok, nil).json(t)
		if round == 1 && (evs["total_events"] != float64(2) || evs["total_sessions"] != float64(0)) {
			t.Errorf("restart did not start empty: %v", evs)
		}
		ts.createSession(map[string]any{"goal": "leave a trace", "agent_loop": false})
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.Contains(p, ".db") || strings.Contains(p, "sqlite")) {
			t.Errorf("database file created: %s", p)
		}
		return nil
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func urlq(s string) string {
	r := strings.NewReplacer(" ", "%20", "'", "%27", ";", "%3B", "=", "%3D")
	return r.Replace(s)
}
