//go:build linux

package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyRoute: an API session in overlay mode on the real native tier
// writes through its overlay; POST /api/sessions/{id}/apply is admin-only,
// refuses a conflict with the host naming the file (409), applies on a
// dry run nothing, and then writes the change and records
// workspace_applied on the session's chain.
func TestApplyRoute(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(ws, 0o777)
	os.WriteFile(filepath.Join(ws, "main.txt"), []byte("old\n"), 0o666)
	ts := startServer(t, tsOptions{native: true, workspace: ws, env: map[string]string{"ECTO_SANDBOX_PERMISSIVE": "false", "ECTO_SANDBOX_WORKSPACE": "overlay"}})
	id := ts.createSession(map[string]any{"goal": "format", "agent_loop": false})
	ts.intent(id, `{"action":"run_command","params":{"command":"echo new > main.txt && echo built > out.txt"},"justification":"build the project"}`)
	if b, _ := os.ReadFile(filepath.Join(ws, "main.txt")); string(b) != "old\n" {
		t.Fatalf("the real main.txt is %q before apply", b)
	}
	ts.wantStatus(t, "apply as the agent", 403, "POST", "/api/sessions/"+id+"/apply", agentTok, map[string]any{})

	os.WriteFile(filepath.Join(ws, "main.txt"), []byte("host edit\n"), 0o666)
	r := ts.call("POST", "/api/sessions/"+id+"/apply", adminTok, map[string]any{})
	if r.status != 409 || !strings.Contains(string(r.body), "main.txt") {
		t.Fatalf("apply with a host conflict: %d %s", r.status, r.body)
	}
	os.WriteFile(filepath.Join(ws, "main.txt"), []byte("old\n"), 0o666)

	r = ts.call("POST", "/api/sessions/"+id+"/apply", adminTok, map[string]any{"dry_run": true})
	if r.status != 200 {
		t.Fatalf("dry run: %d %s", r.status, r.body)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Fatal("a dry run wrote out.txt")
	}
	r = ts.call("POST", "/api/sessions/"+id+"/apply", adminTok, map[string]any{})
	if r.status != 200 {
		t.Fatalf("apply: %d %s", r.status, r.body)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(b) != "built\n" {
		t.Fatalf("out.txt after apply: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "main.txt")); string(b) != "new\n" {
		t.Fatalf("main.txt after apply: %q", b)
	}
	found := false
	for _, e := range ts.events(id) {
		if p := e["payload"].(map[string]any); p["type"] == "workspace_applied" {
			found = strings.HasPrefix(p["by"].(string), "operator:api:")
		}
	}
	if !found {
		t.Fatalf("no workspace_applied event by the API: %v", payloadTypes(ts.events(id)))
	}
	if v := ts.call("GET", "/api/sessions/"+id+"/verify", adminTok, nil).json(t); v["ok"] != true {
		t.Errorf("verify: %v", v)
	}
}
