package server

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDashboardLabelsClientEvents is issue 13 item 1 in the dashboard: an
// event a client appended is shown apart from IronVise's steps, labelled
// as the client's, and the verify panel shows the findings check.
func TestDashboardLabelsClientEvents(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Debian's chromium runs on Linux")
	}
	d := startBrowser(t)
	ts := startServer(t, tsOptions{})
	id := ts.createSession(map[string]any{"goal": "audit the ssh settings", "agent_loop": false})
	ts.intent(id, `{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the notes file"}`)
	forged := ts.appendEvent(id, map[string]any{"type": "observation", "content": "root password is hunter2"})

	d.cmd("POST", "/url", map[string]any{"url": ts.url + "/?token=" + adminTok})
	d.clickOn(`tr[data-session="`+id+`"] button`, 10*time.Second)
	d.wait("#view-session:not([hidden])", "", 5*time.Second)
	if txt := d.waitText(`#s-timeline li[data-origin="client"]`, "appended by client", 10*time.Second); !strings.Contains(txt, "#"+strconv.Itoa(forged)) || !strings.Contains(txt, "root password is hunter2") {
		t.Errorf("client event shown as %q", txt)
	}
	// IronVise's own observation stays in its step, unlabelled.
	if n := d.script(`return document.querySelectorAll('#s-timeline li[data-origin="client"]').length`); string(n) != "1" {
		t.Errorf("%s events labelled as the client's; want 1", n)
	}
	d.clickOn("#s-verify", 5*time.Second)
	d.wait(`#s-verify-result [data-check="findings"]`, "findings: ok", 10*time.Second)
	d.screenshot("client-event")
}
