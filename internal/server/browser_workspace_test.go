package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestDashboardWorkspaceChanges: in a real browser, a session in overlay
// mode shows each step's change set (paths, a folded text diff rendered as
// text, never as markup) and a workspace panel; "Preview apply" lists what
// would be written and writes nothing; "Apply to the workspace", once
// confirmed, writes the changes into the real workspace and the panel then
// says it was applied; once the session is sealed the panel says that later
// applications are recorded on the instance chain.
func TestDashboardWorkspaceChanges(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Debian's chromium runs on Linux; overlay mode needs the native Linux tier")
	}
	d := startBrowser(t)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(ws, 0o777)
	os.WriteFile(filepath.Join(ws, "main.txt"), []byte("old\n"), 0o666)
	ts := startServer(t, tsOptions{native: true, workspace: ws, env: map[string]string{"ECTO_SANDBOX_PERMISSIVE": "false", "ECTO_SANDBOX_WORKSPACE": "overlay"}})
	id := ts.createSession(map[string]any{"goal": "format the project", "agent_loop": false})
	ts.intent(id, `{"action":"run_command","params":{"command":"echo new > main.txt && printf '<script>window.pwned=1</script>\\n' > page.html"},"justification":"rewrite the files"}`)

	d.cmd("POST", "/url", map[string]any{"url": ts.url + "/?token=" + adminTok})
	d.clickOn(`tr[data-session="`+id+`"] button`, 10*time.Second)
	d.wait("#view-session:not([hidden])", "", 5*time.Second)
	d.wait(`#s-timeline .diff[data-accepted="true"]`, "2 path(s) changed · kept for apply", 10*time.Second)
	d.wait(`#s-timeline .diff li[data-path="main.txt"]`, "modified main.txt", 5*time.Second)
	d.wait(`#s-timeline .diff li[data-path="page.html"]`, "added page.html", 5*time.Second)
	// The diff is text: the page's script never runs, and no element is
	// made from it.
	d.script(`document.querySelectorAll('#s-timeline details').forEach((e) => { e.open = true; })`)
	d.wait(`#s-timeline .diff li[data-path="page.html"] pre`, "+<script>window.pwned=1</script>", 5*time.Second)
	var pwned bool
	json.Unmarshal(d.script(`return window.pwned === 1 || document.querySelector('#s-timeline .diff script') !== null`), &pwned)
	if pwned {
		t.Fatal("the diff's content was rendered as markup")
	}
	d.wait(`#s-workspace:not([hidden])`, "not applied: the real workspace is unchanged", 5*time.Second)
	d.screenshot("06-workspace-changes")

	d.clickOn("#s-apply-dry", 5*time.Second)
	d.wait(`#s-apply-result [data-result="dry-run"]`, "Would apply 2 path(s) from step(s) 1", 10*time.Second)
	if b, _ := os.ReadFile(filepath.Join(ws, "main.txt")); string(b) != "old\n" {
		t.Fatalf("the preview wrote main.txt: %q", b)
	}

	d.clickOn("#s-apply", 5*time.Second)
	d.cmd("POST", "/alert/accept", map[string]any{})
	d.wait(`#s-apply-result [data-result="applied"]`, "Applied 2 path(s)", 10*time.Second)
	d.wait(`#s-workspace-summary`, "applied 1 time(s)", 10*time.Second)
	d.wait(`#s-timeline li[data-type="workspace_applied"]`, "applied 2 path(s) from step(s) 1 to "+ws+" · by operator:api:", 5*time.Second)
	if b, _ := os.ReadFile(filepath.Join(ws, "main.txt")); string(b) != "new\n" {
		t.Fatalf("main.txt after apply in the dashboard: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "page.html")); !strings.Contains(string(b), "<script>") {
		t.Fatalf("page.html after apply in the dashboard: %q", b)
	}
	d.screenshot("07-workspace-applied")

	// Sealed, the chain takes no more events: the panel no longer claims
	// to know whether an apply happened since.
	d.clickOn("#s-seal", 5*time.Second)
	d.wait(`#s-workspace-summary`, "sealed: an apply or a discard since is recorded on the instance chain", 10*time.Second)
}
