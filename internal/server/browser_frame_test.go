package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestNoResponseCanBeFramed is issue 13 item 9's headers: the dashboard
// and every other answer forbid framing, for browsers that read CSP and for
// those that read only X-Frame-Options.
func TestNoResponseCanBeFramed(t *testing.T) {
	ts := startServer(t, tsOptions{})
	for _, c := range []struct{ path, tok string }{{"/", ""}, {"/api/status", ""}, {"/api/sessions", adminTok}, {"/metrics", adminTok}} {
		r := ts.call("GET", c.path, c.tok, nil, "Accept", "text/html")
		if got := r.header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("GET %s: X-Frame-Options %q; want DENY", c.path, got)
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q; want frame-ancestors 'none'", c.path, csp)
		}
	}
}

// TestDashboardFramingAndList is issue 13 item 9 in Chromium: a page of
// another origin that frames the dashboard and posts it a token gets an
// empty frame (the browser refuses to render it); the session list tells
// sessions created within the same minute apart and shows each one's
// denials.
func TestDashboardFramingAndList(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Debian's chromium runs on Linux")
	}
	d := startBrowser(t)
	ts := startServer(t, tsOptions{})
	var ids []string
	for range 3 {
		ids = append(ids, ts.createSession(map[string]any{"goal": "inspect the notes", "agent_loop": false}))
	}
	for i := range 2 {
		if r := ts.intent(ids[0], fmt.Sprintf(`{"action":"run_command","params":{"command":"sudo ls %d"},"justification":"list as root"}`, i)); r["verdict"] != "deny" {
			t.Fatalf("denial: %v", r)
		}
	}

	// A foreign page frames the dashboard and hands it its own token.
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><iframe id="f" src="%s/" width="800" height="600"></iframe>
<script>setInterval(function(){document.getElementById('f').contentWindow.postMessage({type:'ectoledgerSetToken',token:%q},'*')},100)</script>`, ts.url, adminTok)
	}))
	defer foreign.Close()
	d.cmd("POST", "/url", map[string]any{"url": foreign.URL})
	frame := d.wait("#f", "", 10*time.Second)
	time.Sleep(1500 * time.Millisecond) // the frame loads, the messages go out
	d.cmd("POST", "/frame", map[string]any{"id": map[string]string{elementKey: frame}})
	var framed struct {
		URL       string `json:"url"`
		Dashboard bool   `json:"dashboard"`
	}
	json.Unmarshal(d.script(`return {url: document.URL, dashboard: !!document.getElementById('sessions-body')}`), &framed)
	d.cmd("POST", "/frame/parent", map[string]any{})
	if framed.Dashboard || strings.HasPrefix(framed.URL, ts.url) {
		d.screenshot("framed")
		t.Fatalf("a page of another origin framed the dashboard (frame at %q, dashboard rendered: %v)", framed.URL, framed.Dashboard)
	}

	d.cmd("POST", "/url", map[string]any{"url": ts.url + "/?token=" + adminTok})
	seen := map[string]bool{}
	for _, id := range ids {
		txt := d.waitText(`tr[data-session="`+id+`"] code`, "", 10*time.Second)
		if seen[txt] {
			t.Errorf("two sessions shown as %q", txt)
		}
		seen[txt] = true
		if !strings.HasSuffix(txt, id[len(id)-6:]) {
			t.Errorf("session %s shown as %q; want its last digits shown", id, txt)
		}
	}
	d.wait(`tr[data-session="`+ids[0]+`"] td.denials`, "2", 5*time.Second)
	d.wait(`tr[data-session="`+ids[1]+`"] td.denials`, "0", 5*time.Second)
	d.screenshot("sessions-denials")
}
