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

// TestCreateSessionWorkspaceMode: POST /api/sessions takes the session's
// workspace_mode. Under overlay configuration "ro" keeps the workspace
// read-only for that session (its genesis says so) while a session
// without the field writes through its overlay; a value other than ro and
// overlay is refused with 422 before the session exists.
func TestCreateSessionWorkspaceMode(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(ws, 0o777)
	ts := startServer(t, tsOptions{native: true, workspace: ws, env: map[string]string{"ECTO_SANDBOX_PERMISSIVE": "false", "ECTO_SANDBOX_WORKSPACE": "overlay"}})

	ro := ts.createSession(map[string]any{"goal": "read only", "agent_loop": false, "workspace_mode": "ro"})
	ts.intent(ro, `{"action":"run_command","params":{"command":"echo x > ro.txt"},"justification":"try to write the workspace"}`)
	ov := ts.createSession(map[string]any{"goal": "overlay", "agent_loop": false})
	ts.intent(ov, `{"action":"run_command","params":{"command":"echo y > ov.txt"},"justification":"write through the overlay"}`)
	mode := func(id string) (string, bool) {
		for _, e := range ts.events(id) {
			if p := e["payload"].(map[string]any); p["type"] == "genesis" {
				w, _ := p["workspace"].(map[string]any)
				m, _ := w["mode"].(string)
				n, _ := w["narrowed_by_session"].(bool)
				return m, n
			}
		}
		return "", false
	}
	if m, n := mode(ro); m != "ro" || !n {
		t.Errorf("the ro session's genesis records mode %q, narrowed by the session %v", m, n)
	}
	if m, n := mode(ov); m != "overlay" || n {
		t.Errorf("the default session's genesis records mode %q, narrowed by the session %v", m, n)
	}
	diffs := func(id string) int {
		n := 0
		for _, e := range ts.events(id) {
			if p := e["payload"].(map[string]any); p["type"] == "workspace_diff" {
				n++
			}
		}
		return n
	}
	if diffs(ro) != 0 || diffs(ov) != 1 {
		t.Errorf("workspace_diff events: ro session %d, overlay session %d; want 0 and 1", diffs(ro), diffs(ov))
	}
	for _, f := range []string{"ro.txt", "ov.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s reached the real workspace", f)
		}
	}

	r := ts.call("POST", "/api/sessions", adminTok, map[string]any{"goal": "g", "agent_loop": false, "workspace_mode": "rw"})
	if r.status != 422 || !strings.Contains(string(r.body), `want \"ro\" or \"overlay\"`) {
		t.Errorf("workspace_mode rw: %d %s", r.status, r.body)
	}
}
