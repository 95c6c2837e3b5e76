package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest sends a request line as written (no client-side cleaning)
// and returns the status code and body.
func rawRequest(t *testing.T, addr, method, target, tok string) (int, http.Header, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", method, target, tok)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// TestOddPathsNeverRedirect covers docs/design/api.md#path-rules and
// checklist item 31.
func TestOddPathsNeverRedirect(t *testing.T) {
	ts := startServer(t, tsOptions{})
	addr := ts.Addr()
	cases := []struct {
		target string
		want   int
	}{
		{"/api/policies/../../etc/passwd", 400},
		{"/api/policies/..%2F..%2Fetc%2Fpasswd", 400},
		{"/api/policies/%2e%2e", 400},
		{"/api/policies/%2E%2E/x", 400},
		{"/api/policies/./soc2-audit", 400},
		{"/api/policies/foo/../bar", 400},
		{"/api/policies/foo%2f..%2fbar", 400},
		{"/api/policies/foo%5Cbar", 400},
		{`/api/policies/foo\bar`, 400},
		{"/api/policies/foo%00bar", 400},
		{"/api/policies/foo%0abar", 400},
		{"/api/policies/../sneaky", 400},
		{"/api/sessions/", 404},
		{"/api//sessions", 404},
		{"//api/sessions", 404},
		{"/api/sessions%2F" + someID, 400},
		{"/api/policies/" + strings.Repeat("a", 200), 400},
		{"/api/policies/Soc2", 400},
		{"/api/nonexistent-endpoint-xyz", 404},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			code, h, body := rawRequest(t, addr, "GET", c.target, adminTok)
			if code >= 300 && code < 400 {
				t.Fatalf("redirect %d to %q", code, h.Get("Location"))
			}
			if code != c.want {
				t.Errorf("got %d %s; want %d", code, body, c.want)
			}
			if !strings.HasPrefix(body, `{"error":`) {
				t.Errorf("body %q is not a JSON error", body)
			}
		})
	}
	// Invalid percent-encoding is refused by net/http itself (plain 400),
	// never redirected.
	if code, _, _ := rawRequest(t, addr, "GET", "/api/policies/%zz", adminTok); code != 400 {
		t.Errorf("invalid escape: %d", code)
	}
}

// TestMethodsHeadOptions: 405 with Allow, HEAD on GET routes, preflight.
func TestMethodsHeadOptions(t *testing.T) {
	ts := startServer(t, tsOptions{})
	r := ts.call("DELETE", "/api/sessions", adminTok, nil)
	if r.status != 405 || r.header.Get("Allow") != "GET, HEAD, OPTIONS, POST" {
		t.Errorf("DELETE /api/sessions: %d Allow=%q", r.status, r.header.Get("Allow"))
	}
	if r := ts.call("PATCH", "/healthz", "", nil); r.status != 405 {
		t.Errorf("PATCH /healthz: %d (405 needs no token)", r.status)
	}
	for _, rc := range routeCases {
		if rc.method != "GET" {
			continue
		}
		if strings.Contains(rc.path, "stream") {
			continue // a GET stream stays open; its HEAD is checked below
		}
		get := ts.call("GET", rc.path, adminTok, nil)
		head := ts.call("HEAD", rc.path, adminTok, nil)
		if head.status != get.status || len(head.body) != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes; GET gave %d", rc.path, head.status, len(head.body), get.status)
		}
		if head.header.Get("Content-Type") != get.header.Get("Content-Type") {
			t.Errorf("HEAD %s: Content-Type %q, GET %q", rc.path, head.header.Get("Content-Type"), get.header.Get("Content-Type"))
		}
	}
	// Stream HEAD answers the SSE headers and closes.
	h := ts.call("HEAD", "/api/stream", adminTok, nil)
	if h.status != 200 || h.header.Get("Content-Type") != "text/event-stream" || h.header.Get("X-Accel-Buffering") != "no" {
		t.Errorf("HEAD stream: %d %v", h.status, h.header)
	}
}

func TestCORS(t *testing.T) {
	t.Run("wildcard", func(t *testing.T) {
		ts := startServer(t, tsOptions{})
		r := ts.call("OPTIONS", "/api/sessions", "", nil, "Origin", "https://example.com", "Access-Control-Request-Method", "POST")
		if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "*" || len(r.body) != 0 {
			t.Fatalf("preflight: %d %v %q", r.status, r.header, r.body)
		}
		if r.header.Get("Access-Control-Allow-Methods") != "GET, HEAD, POST, PUT, DELETE, OPTIONS" || r.header.Get("Access-Control-Max-Age") != "600" ||
			r.header.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type, Last-Event-ID" || r.header.Get("Allow") == "" {
			t.Errorf("preflight headers %v", r.header)
		}
		if r.header.Get("Access-Control-Allow-Credentials") != "" {
			t.Error("credentials must never be allowed")
		}
		r = ts.call("OPTIONS", "/api/sessions", "", nil, "Origin", "https://example.com", "Access-Control-Request-Headers", "Authorization, X-Custom")
		if r.header.Get("Access-Control-Allow-Headers") != "Authorization, X-Custom" {
			t.Errorf("requested headers not echoed: %v", r.header)
		}
		ts.wantStatus(t, "OPTIONS on an unknown path", 404, "OPTIONS", "/api/nope", "", nil, "Origin", "https://example.com")
		if r := ts.call("GET", "/api/sessions", "", nil, "Origin", "https://example.com"); r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("a 401 must carry CORS headers too: %v", r.header)
		}
	})
	t.Run("listed origins", func(t *testing.T) {
		ts := startServer(t, tsOptions{env: map[string]string{"ECTO_CORS_ORIGINS": "https://ops.example.com"}})
		r := ts.call("OPTIONS", "/api/sessions", "", nil, "Origin", "https://ops.example.com")
		if r.header.Get("Access-Control-Allow-Origin") != "https://ops.example.com" || r.header.Get("Vary") != "Origin" {
			t.Errorf("allowed origin: %v", r.header)
		}
		r = ts.call("OPTIONS", "/api/sessions", "", nil, "Origin", "https://evil.example.com")
		if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("disallowed origin got CORS headers: %d %v", r.status, r.header)
		}
	})
}

// TestBodyRules covers docs/design/api.md#bodies-and-status.
func TestBodyRules(t *testing.T) {
	ts := startServer(t, tsOptions{})
	big := `{"goal":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	cases := []struct {
		name    string
		body    any
		headers []string
		want    int
	}{
		{"too large", big, []string{"Content-Type", "application/json"}, 413},
		{"no content type", `{"goal":"x"}`, nil, 415},
		{"xml", `{"goal":"x"}`, []string{"Content-Type", "text/xml"}, 415},
		{"json with charset", `{"goal":"x"}`, []string{"Content-Type", "Application/JSON; charset=utf-8"}, 200},
		{"vendor json", `{"goal":"x"}`, []string{"Content-Type", "application/vnd.ironvise+json"}, 200},
		{"broken json", `{broken json`, []string{"Content-Type", "application/json"}, 400},
		{"empty", ``, []string{"Content-Type", "application/json"}, 400},
		{"trailing data", `{"goal":"x"} {}`, []string{"Content-Type", "application/json"}, 400},
		{"invalid utf-8", "{\"goal\":\"\xff\"}", []string{"Content-Type", "application/json"}, 400},
		{"array", `["goal"]`, []string{"Content-Type", "application/json"}, 422},
		{"goal number", `{"goal":5}`, []string{"Content-Type", "application/json"}, 422},
		{"missing goal", `{}`, []string{"Content-Type", "application/json"}, 422},
		{"agent_loop string", `{"goal":"x","agent_loop":"yes"}`, []string{"Content-Type", "application/json"}, 422},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.call("POST", "/api/sessions", adminTok, c.body, c.headers...)
			if r.status != c.want {
				t.Errorf("got %d %s; want %d", r.status, r.body, c.want)
			}
			if r.status >= 400 && !strings.HasPrefix(string(r.body), `{"error":`) {
				t.Errorf("error body %q", r.body)
			}
		})
	}
	t.Run("chunked over the limit", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() {
			pw.Write([]byte(`{"goal":"`))
			chunk := []byte(strings.Repeat("b", 64<<10))
			for i := 0; i < 20; i++ {
				if _, err := pw.Write(chunk); err != nil {
					return
				}
			}
			pw.Write([]byte(`"}`))
			pw.Close()
		}()
		req, _ := http.NewRequest("POST", ts.url+"/api/sessions", pr)
		req.Header.Set("Authorization", "Bearer "+adminTok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 413 {
			t.Errorf("chunked: %d", res.StatusCode)
		}
	})
	t.Run("body-less routes ignore the body", func(t *testing.T) {
		r := ts.call("GET", "/api/sessions", adminTok, "garbage", "Content-Type", "application/json")
		if r.status != 200 {
			t.Errorf("GET with a body: %d", r.status)
		}
	})
}

// TestCommonHeaders: X-Request-Id echo rules and the security headers.
func TestCommonHeaders(t *testing.T) {
	ts := startServer(t, tsOptions{})
	r := ts.call("GET", "/api/sessions", adminTok, nil, "X-Request-Id", "abc.DEF_123-x")
	if r.header.Get("X-Request-Id") != "abc.DEF_123-x" {
		t.Errorf("echo: %q", r.header.Get("X-Request-Id"))
	}
	for _, bad := range []string{strings.Repeat("a", 65), "a b", "a/b", "ü"} {
		r := ts.call("GET", "/api/sessions", adminTok, nil, "X-Request-Id", bad)
		if got := r.header.Get("X-Request-Id"); got == bad || len(got) != 16 {
			t.Errorf("unsafe id %q echoed as %q", bad, got)
		}
	}
	r = ts.call("GET", "/api/nope", "", nil)
	for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "Content-Type": "application/json"} {
		if r.header.Get(k) != v {
			t.Errorf("%s = %q; want %q", k, r.header.Get(k), v)
		}
	}
	d := ts.call("GET", "/", "", nil)
	if d.header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(d.header.Get("Content-Security-Policy"), "form-action 'none'") {
		t.Errorf("dashboard headers %v", d.header)
	}
}
