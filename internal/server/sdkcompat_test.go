package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSDKCompatibilityNotes is issue 13 item 11: the two places where the
// reference SDK (EctoLedger 0.6.3) meets IronVise's design say so, and
// docs/api.md documents both with the recommended flow.
//
//   - The SDK's create_session cannot send "agent_loop": false: IronVise's
//     own loop drives the session and seals it, and the SDK's hooks that
//     append afterwards get a 409 that now says why and what to do; the
//     recommended flow (create with "agent_loop": false, then append,
//     submit intents and seal) works.
//   - The SDK's policy tests PUT a [metadata]/[rules] TOML, which the
//     strict schema refuses with 422 by design; the message names it.
func TestSDKCompatibilityNotes(t *testing.T) {
	ts := startServer(t, tsOptions{})
	// What the SDK's create_session sends.
	id := ts.createSession(map[string]any{"goal": "Audit the service configuration"})
	if s := ts.waitEnded(id, 10*time.Second); s["status"] == "running" {
		t.Fatalf("the loop did not end: %v", s)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if s := ts.call("GET", "/api/sessions/"+id, adminTok, nil).json(t); s["sealed"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the loop did not seal its session")
		}
	}
	r := ts.call("POST", "/api/sessions/"+id+"/events", agentTok, map[string]any{"type": "thought", "content": "from a hook"})
	if msg, _ := r.json(t)["error"].(string); r.status != 409 || !strings.Contains(msg, `"agent_loop": false`) || !strings.Contains(msg, "SDK compatibility") {
		t.Fatalf("append to a loop-sealed session: %d %s; want 409 explaining agent_loop", r.status, r.body)
	}

	// The recommended flow.
	own := ts.createSession(map[string]any{"goal": "Audit the service configuration", "agent_loop": false})
	if r := ts.call("POST", "/api/sessions/"+own+"/events", agentTok, map[string]any{"type": "thought", "content": "from a hook"}); r.status != 201 {
		t.Fatalf("append in the recommended flow: %d %s", r.status, r.body)
	}
	ts.intent(own, `{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the notes file"}`)
	if r := ts.call("POST", "/api/sessions/"+own+"/seal", agentTok, nil); r.status != 200 {
		t.Fatalf("seal in the recommended flow: %d %s", r.status, r.body)
	}

	// The SDK's policy layout.
	sdkPolicy := "[metadata]\nname = \"sdk-test\"\nversion = \"1.0\"\n\n[rules]\nallow = [\"read_file\"]\n"
	p := ts.call("PUT", "/api/policies/sdk-test", adminTok, sdkPolicy)
	if p.status != 422 || !strings.Contains(string(p.body), "EctoLedger SDK") {
		t.Fatalf("PUT an SDK-layout policy: %d %s; want 422 naming the layout", p.status, p.body)
	}

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(doc), "## SDK compatibility")
	if i < 0 {
		t.Fatal(`docs/api.md has no "SDK compatibility" section`)
	}
	section := string(doc[i:])
	for _, want := range []string{"create_session", `"agent_loop": false`, "409", "[metadata]", "[rules]", "422"} {
		if !strings.Contains(section, want) {
			t.Errorf("the SDK compatibility section does not mention %s", want)
		}
	}
}
