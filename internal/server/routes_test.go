package server

import (
	"net/http"
	"strings"
	"testing"
)

// routeCase is one row of docs/design/api.md#routes with a concrete path.
type routeCase struct {
	method, path string
	access       access
}

const someID = "0f8fad5b-d9cb-469f-a165-70867728950e"

var routeCases = []routeCase{
	{"GET", "/", public},
	{"GET", "/api/status", public},
	{"GET", "/healthz", public},
	{"GET", "/readyz", public},
	{"GET", "/api/sessions", anyRole},
	{"POST", "/api/sessions", writeRole},
	{"GET", "/api/sessions/" + someID, anyRole},
	{"POST", "/api/sessions/" + someID + "/seal", writeRole},
	{"POST", "/api/sessions/" + someID + "/events", writeRole},
	{"GET", "/api/events?session_id=" + someID, anyRole},
	{"GET", "/api/sessions/" + someID + "/verify", anyRole},
	{"GET", "/api/sessions/" + someID + "/compliance", anyRole},
	{"GET", "/api/sessions/" + someID + "/vc", anyRole},
	{"GET", "/api/sessions/" + someID + "/vc/verify", anyRole},
	{"GET", "/api/stream?after=99999999", anyRole},
	{"GET", "/api/sessions/" + someID + "/events/stream", anyRole},
	{"POST", "/api/sessions/" + someID + "/intents", writeRole},
	{"GET", "/api/sessions/" + someID + "/events/0/proof", anyRole},
	{"GET", "/api/checkpoints/latest", anyRole},
	{"GET", "/api/certificates/" + someID, anyRole},
	{"GET", "/api/reports/" + someID, anyRole},
	{"POST", "/api/chat", writeRole},
	{"POST", "/api/sessions/" + someID + "/chat", writeRole},
	{"GET", "/api/approvals/" + someID + "/pending", anyRole},
	{"POST", "/api/approvals/" + someID, adminRole},
	{"GET", "/api/policies", anyRole},
	{"GET", "/api/policies/soc2-audit", anyRole},
	{"PUT", "/api/policies/mine", adminRole},
	{"DELETE", "/api/policies/mine", adminRole},
	{"GET", "/api/metrics", anyRole},
	{"GET", "/api/metrics/security", anyRole},
	{"GET", "/metrics", adminRole},
	{"GET", "/api/config", adminRole},
	{"PUT", "/api/config", adminRole},
	{"GET", "/api/tripwire", anyRole},
	{"GET", "/api/config/tripwire", anyRole},
	{"PUT", "/api/tripwire", adminRole},
	{"PUT", "/api/config/tripwire", adminRole},
	{"GET", "/api/tokens", adminRole},
	{"POST", "/api/tokens", adminRole},
	{"DELETE", "/api/tokens/" + strings.Repeat("ab", 32), adminRole},
	{"GET", "/api/webhooks", adminRole},
	{"POST", "/api/webhooks", adminRole},
	{"PUT", "/api/webhooks/" + someID, adminRole},
	{"PUT", "/api/webhooks/" + someID + "/toggle", adminRole},
	{"DELETE", "/api/webhooks/" + someID, adminRole},
	{"POST", "/api/admin/reset-demo", adminRole},
	{"GET", "/api/sandbox", anyRole},
	{"POST", "/api/sessions/" + someID + "/apply", adminRole},
	{"POST", "/api/hooks/claude-code", writeRole},
	{"POST", "/api/hooks/codex", writeRole},
	{"POST", "/mcp", writeRole},
	{"GET", "/mcp", writeRole},
	{"DELETE", "/mcp", writeRole},
}

// TestRouteTableCoversSpec checks that every route of the table above is
// registered with the access docs/api.md gives it, and nothing else is.
func TestRouteTableCoversSpec(t *testing.T) {
	s := &Server{}
	s.routes()
	n := 0
	for _, p := range s.router.paths {
		n += len(p.methods)
	}
	if n != len(routeCases) {
		t.Errorf("router has %d method routes; the route table has %d", n, len(routeCases))
	}
	for _, rc := range routeCases {
		path := rc.path
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		segs, prob := splitPath(path)
		if prob != nil {
			t.Fatalf("%s: %v", rc.path, prob)
		}
		e, _ := s.router.match(segs)
		if e == nil || e.methods[rc.method] == nil {
			t.Errorf("%s %s: not routed", rc.method, rc.path)
			continue
		}
		if got := e.methods[rc.method].access; got != rc.access {
			t.Errorf("%s %s: access %d, want %d", rc.method, rc.path, got, rc.access)
		}
	}
}

// TestAuthMatrix is the 401/403 matrix: no token and unknown tokens get 401,
// auditors 403 on writes, agents 403 on admin routes — decided before the
// body is read (the bodies here would be 415 or 400 otherwise).
func TestAuthMatrix(t *testing.T) {
	ts := startServer(t, tsOptions{})
	badBody := []string{"Content-Type", "text/xml"}
	for _, rc := range routeCases {
		t.Run(rc.method+" "+rc.path, func(t *testing.T) {
			if rc.access == public {
				if r := ts.call(rc.method, rc.path, "", nil); r.status != http.StatusOK {
					t.Errorf("public route: %d %s", r.status, r.body)
				}
				return
			}
			for _, tok := range []string{"", "totally-invalid-token-deadbeef"} {
				r := ts.call(rc.method, rc.path, tok, "<not json", badBody...)
				if strings.HasPrefix(rc.path, "/api/hooks/") {
					// An agent lets a call run on an HTTP error: a hook
					// route answers the refusal as a block (hooks.go).
					if r.status != http.StatusOK || r.header.Get("X-Ironvise-Error-Status") != "401" || !strings.Contains(string(r.body), `"decision":"block"`) {
						t.Errorf("token %q: %d %v %s; want 200 with a block", tok, r.status, r.header, r.body)
					}
					continue
				}
				if r.status != http.StatusUnauthorized {
					t.Errorf("token %q: %d %s; want 401", tok, r.status, r.body)
				}
				if r.header.Get("WWW-Authenticate") != `Bearer realm="ironvise"` {
					t.Errorf("401 without WWW-Authenticate: %v", r.header)
				}
				if !strings.Contains(string(r.body), `"error"`) {
					t.Errorf("401 body %q is not a JSON error", r.body)
				}
			}
			method := rc.method
			if strings.Contains(rc.path, "stream") {
				method = "HEAD" // a granted stream would stay open
			}
			check := func(tok, role string, refused bool) {
				r := ts.call(method, rc.path, tok, "<not json", badBody...)
				if strings.Contains(string(r.body), "ECTO_DEMO_MODE") {
					return // reset-demo refuses everyone outside demo mode
				}
				if refused && strings.HasPrefix(rc.path, "/api/hooks/") {
					if r.status != http.StatusOK || r.header.Get("X-Ironvise-Error-Status") != "403" || !strings.Contains(string(r.body), "role "+role) {
						t.Errorf("%s: %d %s; want 200 with a block naming the role", role, r.status, r.body)
					}
					return
				}
				if refused && r.status != http.StatusForbidden {
					t.Errorf("%s: %d %s; want 403", role, r.status, r.body)
				}
				if refused && !strings.Contains(string(r.body), "role "+role) {
					t.Errorf("403 body %q does not name the role", r.body)
				}
				if !refused && (r.status == http.StatusForbidden || r.status == http.StatusUnauthorized) {
					t.Errorf("%s: %d %s; want access", role, r.status, r.body)
				}
			}
			check(auditorTok, "auditor", rc.access == writeRole || rc.access == adminRole)
			check(agentTok, "agent", rc.access == adminRole)
			check(adminTok, "admin", false)
		})
	}
}

// TestQueryToken: ?token= works, the header wins when both are present.
func TestQueryToken(t *testing.T) {
	ts := startServer(t, tsOptions{})
	ts.wantStatus(t, "query token", 200, "GET", "/api/sessions?token="+adminTok, "", nil)
	ts.wantStatus(t, "header must win over the query", 403, "GET", "/api/tokens?token="+adminTok, auditorTok, nil)
	ts.wantStatus(t, "scheme is case-insensitive", 200, "GET", "/api/sessions", "", nil, "Authorization", "bEaReR "+adminTok)
}
