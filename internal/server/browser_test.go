package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/demo"
)

// The dashboard is tested in Debian's headless Chromium through
// chromedriver's W3C WebDriver endpoint (plain HTTP + JSON, so no browser
// automation library is needed). The test skips when the browser is not
// installed; .ci/run installs chromium and chromium-driver.

const (
	chromiumBin     = "/usr/bin/chromium"
	chromedriverBin = "/usr/bin/chromedriver"
	elementKey      = "element-6066-11e4-a52e-4f735466cecf"
)

// webDriver is a minimal W3C WebDriver client.
type webDriver struct {
	t    *testing.T
	base string // http://127.0.0.1:port/session/<id>
	// found, when set, runs in actOn between the find and the command
	// (TestClickOnRedrawnElement redraws the element there).
	found func()
}

func (d *webDriver) cmd(method, path string, body any) json.RawMessage {
	d.t.Helper()
	value, status, raw := d.do(method, path, body)
	if value == nil || status != 200 {
		d.t.Fatalf("webdriver %s %s: %d %s", method, path, status, raw)
	}
	return value
}

// do sends one WebDriver command and returns its answer's value (nil when
// the answer is not WebDriver's JSON), its status and the raw answer.
func (d *webDriver) do(method, path string, body any) (value json.RawMessage, status int, raw []byte) {
	d.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, d.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("webdriver %s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var out struct {
		Value json.RawMessage `json:"value"`
	}
	raw, _ = io.ReadAll(res.Body)
	if json.Unmarshal(raw, &out) != nil {
		return nil, res.StatusCode, raw
	}
	return out.Value, res.StatusCode, raw
}

// find returns an element id, or "" when none matches.
func (d *webDriver) find(css string) string {
	d.t.Helper()
	b, _ := json.Marshal(map[string]string{"using": "css selector", "value": css})
	req, _ := http.NewRequest("POST", d.base+"/element", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Value map[string]any `json:"value"`
	}
	json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != 200 {
		return ""
	}
	id, _ := out.Value[elementKey].(string)
	return id
}

// wait polls until the CSS selector matches (and its text contains want).
func (d *webDriver) wait(css, want string, within time.Duration) string {
	d.t.Helper()
	id, _ := d.waitFor(css, want, within)
	return id
}

// waitText is wait returning the text it matched, read in the same look:
// reading it afterwards by the element's id could meet a redrawn element.
func (d *webDriver) waitText(css, want string, within time.Duration) string {
	d.t.Helper()
	_, text := d.waitFor(css, want, within)
	return text
}

func (d *webDriver) waitFor(css, want string, within time.Duration) (id, text string) {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for {
		if id := d.find(css); id != "" {
			// The page may redraw the element between the find and the
			// read (the dashboard renders its lists again as events
			// come): a stale element is looked up again.
			if text, ok := d.textIfFresh(id); ok && strings.Contains(text, want) {
				return id, text
			}
		}
		if time.Now().After(deadline) {
			d.screenshot("timeout")
			d.t.Fatalf("%q with %q did not appear within %v", css, want, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stale reports whether a failed WebDriver command's value says the
// element is no longer in the page.
func stale(value json.RawMessage) bool {
	var e struct {
		Error string `json:"error"`
	}
	return json.Unmarshal(value, &e) == nil && e.Error == "stale element reference"
}

// textIfFresh is the element's text, with ok false when the element is no
// longer in the page (stale); any other failure fails the test.
func (d *webDriver) textIfFresh(id string) (text string, ok bool) {
	d.t.Helper()
	value, status, raw := d.do("GET", "/element/"+id+"/text", nil)
	if status != 200 {
		if stale(value) {
			return "", false
		}
		d.t.Fatalf("webdriver GET /element/%s/text: %d %s", id, status, raw)
	}
	json.Unmarshal(value, &text)
	return text, true
}

// clickOn waits for the CSS selector and clicks the element it matches.
func (d *webDriver) clickOn(css string, within time.Duration) {
	d.t.Helper()
	d.actOn(css, within, "click", map[string]any{})
}

// typeOn waits for the CSS selector and types text into the element.
func (d *webDriver) typeOn(css, text string, within time.Duration) {
	d.t.Helper()
	d.actOn(css, within, "value", map[string]any{"text": text})
}

// actOn sends one element command to what the CSS selector matches. The
// page may redraw the element between the find and the command (the
// session list and the timeline render again as events come): a stale
// element is looked up again until within has passed.
func (d *webDriver) actOn(css string, within time.Duration, command string, body any) {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for {
		id := d.wait(css, "", time.Until(deadline))
		if d.found != nil {
			d.found()
		}
		value, status, raw := d.do("POST", "/element/"+id+"/"+command, body)
		if status == 200 {
			return
		}
		if !stale(value) || time.Now().After(deadline) {
			d.t.Fatalf("webdriver POST /element/%s/%s: %d %s", id, command, status, raw)
		}
	}
}

func (d *webDriver) typeInto(id, text string) {
	d.cmd("POST", "/element/"+id+"/value", map[string]any{"text": text})
}

func (d *webDriver) script(js string) json.RawMessage {
	return d.cmd("POST", "/execute/sync", map[string]any{"script": js, "args": []any{}})
}

// screenshot saves a PNG as a test artifact.
func (d *webDriver) screenshot(name string) {
	var b64 string
	json.Unmarshal(d.cmd("GET", "/screenshot", nil), &b64)
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		d.t.Errorf("screenshot: %v", err)
		return
	}
	dir := os.Getenv("IRONVISE_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "ironvise-dashboard-screenshots")
	}
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		d.t.Errorf("screenshot: %v", err)
		return
	}
	d.t.Logf("screenshot %s", p)
}

// startBrowser starts chromedriver and a headless Chromium session.
func startBrowser(t *testing.T) *webDriver {
	t.Helper()
	for _, b := range []string{chromiumBin, chromedriverBin} {
		if _, err := os.Stat(b); err != nil {
			t.Skipf("%s is not installed (apt-get install chromium chromium-driver); skipping the dashboard browser test", b)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	drv := exec.Command(chromedriverBin, fmt.Sprintf("--port=%d", port))
	if err := drv.Start(); err != nil {
		t.Fatalf("chromedriver: %v", err)
	}
	t.Cleanup(func() { drv.Process.Kill(); drv.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if res, err := http.Get(base + "/status"); err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("chromedriver did not start")
		}
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{"binary": chromiumBin, "args": []string{
			"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
			"--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir(), "--window-size=1366,900",
		}},
	}}}
	d := &webDriver{t: t, base: base}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(d.cmd("POST", "/session", caps), &sess)
	if sess.SessionID == "" {
		t.Fatal("no WebDriver session")
	}
	d.base = base + "/session/" + sess.SessionID
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", d.base, nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	})
	return d
}

// TestDashboardInBrowser loads the dashboard with a token, watches a demo
// session appear live, opens its timeline, finds a denial with its reason,
// runs verify, and sees the tripwire editor refuse an invalid value.
func TestDashboardInBrowser(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Debian's chromium runs on Linux")
	}
	d := startBrowser(t)
	ws, err := demo.WriteWorkspace(filepath.Join(t.TempDir(), "demo"))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, tsOptions{native: true, workspace: ws, env: map[string]string{"GUARD_REQUIRED": "true", "ECTO_DEMO_MODE": "true"}})

	d.cmd("POST", "/url", map[string]any{"url": ts.url + "/?token=" + adminTok})
	d.wait("#view-sessions:not([hidden])", "", 10*time.Second)
	d.wait("#stream-state.live", "", 10*time.Second)
	var href string
	json.Unmarshal(d.script("return location.href"), &href)
	if strings.Contains(href, "token") {
		t.Errorf("the token stays in the address bar: %s", href)
	}
	var stored string
	json.Unmarshal(d.script("return sessionStorage.getItem('ironvise-token')"), &stored)
	if stored != adminTok {
		t.Errorf("token not kept in sessionStorage: %q", stored)
	}

	// A demo session created elsewhere appears in the list live.
	id := ts.createSession(map[string]any{"goal": demo.Goal, "policy": demo.Policy})
	d.wait(`tr[data-session="`+id+`"]`, "", 10*time.Second)
	ts.waitEnded(id, 20*time.Second)
	d.wait(`tr[data-session="`+id+`"] .pill.completed`, "completed", 10*time.Second)
	d.screenshot("01-sessions")

	// Open it with the keyboard: Enter on the row's button.
	d.typeOn(`tr[data-session="`+id+`"] button`, "\uE007", 5*time.Second)
	d.wait("#view-session:not([hidden])", "", 5*time.Second)
	if txt := d.waitText(`#s-timeline li[data-outcome="deny"] .why`, "Denied by tripwire", 10*time.Second); !strings.Contains(txt, "cmd_interpreter_stdin") {
		t.Errorf("denial reason %q", txt)
	}
	d.wait(`#s-timeline li[data-outcome="deny"] .why`, "Denied by", 5*time.Second)
	d.wait(`#s-timeline .sandbox`, "native-linux", 5*time.Second)
	d.screenshot("02-timeline")

	// Verify shows the five results.
	d.clickOn("#s-verify", 5*time.Second)
	d.wait(`#s-verify-result [data-result="ok"]`, "verified", 10*time.Second)
	for _, c := range []string{"chain", "signatures", "goal", "log", "seal"} {
		d.wait(`#s-verify-result [data-check="`+c+`"]`, c+": ok", 2*time.Second)
	}
	d.screenshot("03-verify")

	// The tripwire editor shows the server's validation error inline.
	d.clickOn(`.tab[data-view="tripwire"]`, 5*time.Second)
	minj := d.wait("#tw-minj", "", 5*time.Second)
	d.wait("#view-tripwire:not([hidden])", "", 5*time.Second)
	time.Sleep(300 * time.Millisecond) // the form loads its values
	d.cmd("POST", "/element/"+minj+"/clear", map[string]any{})
	d.typeInto(minj, "5000")
	d.script(`document.getElementById('tripwire-form').requestSubmit()`)
	d.wait("#tripwire-error", "min_justification_length", 5*time.Second)
	d.screenshot("04-tripwire-error")
	paths := d.wait("#tw-paths", "", 2*time.Second)
	d.cmd("POST", "/element/"+paths+"/clear", map[string]any{})
	d.typeInto(paths, "relative/dir")
	d.cmd("POST", "/element/"+minj+"/clear", map[string]any{})
	d.typeInto(minj, "5")
	d.script(`document.getElementById('tripwire-form').requestSubmit()`)
	d.wait("#tripwire-error", "allowed_roots", 5*time.Second)

	// The other pages render.
	for _, v := range []string{"tokens", "webhooks", "policies", "live", "audit"} {
		d.clickOn(`.tab[data-view="`+v+`"]`, 5*time.Second)
		d.wait("#view-"+v+":not([hidden])", "", 5*time.Second)
	}
	d.wait("#tokens-body tr", "", 5*time.Second)
	d.clickOn(`.tab[data-view="live"]`, 5*time.Second)
	d.wait("#live-body tr", "", 5*time.Second)
	d.screenshot("05-live")
}

// TestWebDriverStaleElement: the harness's wait looks an element up again
// when the page replaced it between the find and the read, instead of
// failing the test (the dashboard redraws its lists as events come).
func TestWebDriverStaleElement(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Debian's chromium runs on Linux")
	}
	d := startBrowser(t)
	d.cmd("POST", "/url", map[string]any{"url": "data:text/html,<p id=x>first</p>"})
	id := d.wait("#x", "first", 10*time.Second)
	d.script(`document.getElementById("x").remove(); const p = document.createElement("p"); p.id = "x"; p.textContent = "second"; document.body.appendChild(p);`)
	if _, ok := d.textIfFresh(id); ok {
		t.Fatal("the replaced element still reads as fresh")
	}
	if got := d.waitText("#x", "second", 10*time.Second); got != "second" {
		t.Fatalf("the new element reads %q", got)
	}
}

// TestClickOnRedrawnElement: a button the page draws again between the
// find and the click is clicked all the same, once (the dashboard's lists
// redraw as events come, and a click on the session list once met a stale
// reference in CI).
func TestClickOnRedrawnElement(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Debian's chromium runs on Linux")
	}
	d := startBrowser(t)
	page := `<div id="box"></div><script>
function draw() { document.getElementById("box").innerHTML = '<button onclick="window.clicked = (window.clicked || 0) + 1">b</button>'; }
draw();
</script>`
	d.cmd("POST", "/url", map[string]any{"url": "data:text/html," + url.PathEscape(page)})
	redraws := 0
	d.found = func() {
		if redraws < 2 {
			redraws++
			d.script(`draw()`)
		}
	}
	d.clickOn("#box button", 10*time.Second)
	d.found = nil
	var clicks int
	json.Unmarshal(d.script(`return window.clicked || 0`), &clicks)
	if redraws != 2 || clicks != 1 {
		t.Fatalf("the button was drawn again %d time(s) between a find and a click and clicked %d time(s); want 2 and 1", redraws, clicks)
	}
}
