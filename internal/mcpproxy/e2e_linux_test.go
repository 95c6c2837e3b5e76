//go:build linux

package mcpproxy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ironvise/ironvise/internal/mcptest"
)

// bin is the ironvise binary; upstream is the MCP server the proxy wraps
// (testdata/upstream), both built for these tests.
var bin, upstream string

func TestMain(m *testing.M) {
	mcptest.Main(m, mcptest.Binary{Pkg: mcptest.Ironvise, Path: &bin},
		mcptest.Binary{Pkg: "github.com/ironvise/ironvise/internal/mcpproxy/testdata/upstream", Path: &upstream})
}

// pinsOf returns `ironvise mcp pins --name demo --json`'s pins by tool.
func pinsOf(t *testing.T, env []string) map[string]map[string]any {
	t.Helper()
	out, err := mcptest.Run(env, bin, "mcp", "pins", "--name", "demo", "--json")
	if err != nil {
		t.Fatalf("mcp pins: %v\n%s", err, out)
	}
	var v struct {
		Pins []map[string]any `json:"pins"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("mcp pins --json: %v\n%s", err, out)
	}
	m := map[string]map[string]any{}
	for _, p := range v.Pins {
		m[p["tool"].(string)] = p
	}
	return m
}

func TestProxyPinsChecksAndRecords(t *testing.T) {
	upLog := filepath.Join(t.TempDir(), "calls.log")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("x"), 0o644)
	base := mcptest.Env(t, "UPSTREAM_LOG="+upLog)
	proxy := []string{"mcp", "proxy", "--name", "demo", "--workspace", ws, "--", upstream}

	// Run 1: every tool is pinned on first sight; the poisoned one is not
	// offered.
	env := append(slices.Clone(base), "UPSTREAM_VARIANT=v1")
	cs, stderr := mcptest.Connect(t, env, bin, proxy...)
	tools := mcptest.ToolNames(t, cs)
	if got := strings.Join(tools, " "); got != "changing crash echo fetch leak read_note shell" {
		t.Fatalf("run 1 offers %q; want every tool but the poisoned one", got)
	}
	if out, isErr := mcptest.Call(t, cs, "echo", map[string]any{"text": "hello"}); isErr || !strings.Contains(out, "hello") {
		t.Fatalf("echo: %v %q", isErr, out)
	}
	if out, isErr := mcptest.Call(t, cs, "read_note", map[string]any{"path": "notes.txt"}); isErr || !strings.Contains(out, "note at notes.txt") {
		t.Fatalf("read_note in the workspace: %v %q", isErr, out)
	}
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	denials := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_note", map[string]any{"path": "~/.ssh/id_rsa"}, "denied by tripwire"},
		{"read_note", map[string]any{"path": home + "/.ssh/id_rsa"}, "denied by tripwire"},
		{"fetch", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, "denied by tripwire"},
		{"shell", map[string]any{"command": "rm -rf /"}, "denied by tripwire"},
		// Shaped by value, under a key that says nothing.
		{"echo", map[string]any{"text": "/etc/shadow"}, "denied by tripwire"},
		{"echo", map[string]any{"text": "see http://169.254.169.254/latest/"}, ""},
		{"echo", map[string]any{"text": "http://169.254.169.254/latest/"}, "denied by tripwire"},
	}
	for _, d := range denials {
		out, isErr := mcptest.Call(t, cs, d.tool, d.args)
		if d.want == "" {
			if isErr {
				t.Errorf("%s %v: %q; want it forwarded (a sentence is not a URL argument)", d.tool, d.args, out)
			}
			continue
		}
		if !isErr || !strings.Contains(out, d.want) {
			t.Errorf("%s %v: error=%v %q; want a tool error %q", d.tool, d.args, isErr, out, d.want)
		}
	}
	out, isErr := mcptest.Call(t, cs, "leak", nil)
	if isErr || strings.Contains(out, "hunter2") || strings.Contains(out, "wJalrXUtnFEMI") || !strings.Contains(out, "[REDACTED:") ||
		strings.Contains(out, "Ignore all previous instructions") || !strings.Contains(out, "suspected prompt injection") ||
		!strings.Contains(out, "image content was withheld") || !strings.Contains(out, "region=eu-west-1") {
		t.Fatalf("leak: error=%v; want the credentials redacted, the injection withheld and flagged, the image withheld:\n%s", isErr, out)
	}
	// A repeated key: the value checked is the value forwarded, and the
	// other one never reaches the server.
	dup, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_note", Arguments: json.RawMessage(`{"path":"/etc/shadow","path":"notes.txt"}`)})
	if err != nil || dup.IsError {
		t.Fatalf("repeated key: %v %+v", err, dup)
	}
	// Calls of tools that are not offered are refused, and recorded.
	if out, isErr := mcptest.Call(t, cs, "poisoned", map[string]any{"a": "1", "b": "2"}); !isErr || !strings.Contains(out, "mcp_tool_withheld") || !strings.Contains(out, "prompt injection") {
		t.Fatalf("the poisoned tool: error=%v %q", isErr, out)
	}
	if out, isErr := mcptest.Call(t, cs, "nope", nil); !isErr || !strings.Contains(out, "mcp_tool_unknown") {
		t.Fatalf("an unknown tool: error=%v %q", isErr, out)
	}
	cs.Close()
	id1 := mcptest.SessionOf(t, stderr.String())
	mcptest.WaitFor(t, "the seal of run 1", func() bool { return strings.Contains(stderr.String(), "sealed") })
	mcptest.Verify(t, env, bin, id1)
	calls, _ := os.ReadFile(upLog)
	for _, never := range []string{"id_rsa", "169.254.169.254/latest/meta", "rm -rf", "shadow", "poisoned"} {
		if strings.Contains(string(calls), never) {
			t.Errorf("a denied call reached the wrapped server (%q):\n%s", never, calls)
		}
	}
	evs := mcptest.Events(t, env, bin, id1)
	if b, _ := json.Marshal(evs); strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "wJalrXUtnFEMI") {
		t.Error("the ledger holds a credential")
	}
	count := map[string]int{}
	for _, ev := range evs {
		count[ev.Type]++
	}
	if count["mcp_tool_pin"] != 8 || count["mcp_tool_call"] != 13 || count["mcp_tool_result"] != 5 {
		t.Errorf("recorded %v; want 8 pins, 13 calls, 5 results (only the allowed calls were forwarded)", count)
	}
	pins := pinsOf(t, env)
	if p := pins["changing"]; p["status"] != "first_seen" || p["withheld"] != false || p["pinned_sha256"] != p["sha256"] {
		t.Errorf("changing after run 1: %v", p)
	}
	if p := pins["poisoned"]; p["withheld"] != true || p["pinned_sha256"] != "" || !strings.Contains(p["reason"].(string), "prompt injection") {
		t.Errorf("poisoned after run 1: %v", p)
	}

	// Run 2: the description of "changing" changed: withheld and flagged.
	// A policy rule denies echo of a word.
	pol := filepath.Join(t.TempDir(), "mcp.toml")
	os.WriteFile(pol, []byte(`name = "mcp-test"
[[mcp_tool_rules]]
id = "no-secret-echo"
server = "demo"
tool = "echo"
args = [{ name = "text", pattern = "(?i)classified" }]
decision = "deny"
reason = "classified text stays here"
`), 0o644)
	env = append(slices.Clone(base), "UPSTREAM_VARIANT=v2")
	cs, stderr = mcptest.Connect(t, env, bin, append([]string{"mcp", "proxy", "--name", "demo", "--workspace", ws, "--policy", pol, "--"}, upstream)...)
	if got := strings.Join(mcptest.ToolNames(t, cs), " "); got != "crash echo fetch leak read_note shell" {
		t.Fatalf("run 2 offers %q; want the changed tool withheld", got)
	}
	out, isErr = mcptest.Call(t, cs, "echo", map[string]any{"text": "the CLASSIFIED plan"})
	if !isErr || !strings.Contains(out, "denied by policy: policy_mcp_tool_rule") || !strings.Contains(out, "classified text stays here") {
		t.Fatalf("policy: error=%v %q", isErr, out)
	}
	if out, isErr := mcptest.Call(t, cs, "echo", map[string]any{"text": "public"}); isErr || !strings.Contains(out, "public") {
		t.Fatalf("echo allowed by the policy: %v %q", isErr, out)
	}
	cs.Close()
	id2 := mcptest.SessionOf(t, stderr.String())
	mcptest.WaitFor(t, "the seal of run 2", func() bool { return strings.Contains(stderr.String(), "sealed") })
	mcptest.Verify(t, env, bin, id2)
	pins2 := pinsOf(t, env)
	if p := pins2["changing"]; p["status"] != "changed" || p["withheld"] != true || p["pinned_sha256"] != pins["changing"]["pinned_sha256"] || p["sha256"] == p["pinned_sha256"] {
		t.Fatalf("changing after run 2: %v", p)
	}
	if !strings.Contains(stderr.String(), "tool withheld") || !strings.Contains(stderr.String(), "changing") {
		t.Errorf("the proxy did not report the withheld tool:\n%s", stderr)
	}

	// Approving the change offers it again; the poisoned tool stays out.
	if out, err := mcptest.Run(env, bin, "mcp", "pins", "approve", "--name", "demo", "changing"); err != nil {
		t.Fatalf("approve: %v %s", err, out)
	} else {
		mcptest.Verify(t, env, bin, mcptest.SessionOf(t, out))
	}
	if out, err := mcptest.Run(env, bin, "mcp", "pins", "approve", "--name", "demo", "echo"); err == nil {
		t.Fatalf("approving an unchanged pin succeeded: %s", out)
	}
	cs, stderr = mcptest.Connect(t, env, bin, proxy...)
	if got := strings.Join(mcptest.ToolNames(t, cs), " "); got != "changing crash echo fetch leak read_note shell" {
		t.Fatalf("run 3 offers %q; want the approved tool back", got)
	}
	cs.Close()
	mcptest.WaitFor(t, "the seal of run 3", func() bool { return strings.Contains(stderr.String(), "sealed") })
	mcptest.Verify(t, env, bin, mcptest.SessionOf(t, stderr.String()))
	if p := pinsOf(t, env)["changing"]; p["status"] != "match" {
		t.Fatalf("changing after the approval: %v", p)
	}
}

func TestProxyFailsClosedWhenTheWrappedServerCrashes(t *testing.T) {
	upLog := filepath.Join(t.TempDir(), "calls.log")
	env := mcptest.Env(t, "UPSTREAM_LOG="+upLog)
	cs, stderr := mcptest.Connect(t, env, bin, "mcp", "proxy", "--name", "crashy", "--", upstream)
	out, isErr, err := mcptest.TryCall(cs, "crash", nil)
	if err == nil && !isErr {
		t.Fatalf("the crash call succeeded: %q", out)
	}
	if err == nil && !strings.Contains(out, "did not answer") {
		t.Errorf("crash: %q", out)
	}
	out, isErr = mcptest.Call(t, cs, "echo", map[string]any{"text": "still there?"})
	if !isErr || strings.Contains(out, "still there?") {
		t.Fatalf("a call after the crash: error=%v %q; want a tool error", isErr, out)
	}
	cs.Close()
	mcptest.WaitFor(t, "the seal", func() bool { return strings.Contains(stderr.String(), "sealed") })
	id := mcptest.SessionOf(t, stderr.String())
	mcptest.Verify(t, env, bin, id)
	out, _ = mcptest.Run(env, bin, "sessions", "--json")
	if !strings.Contains(out, id) || !strings.Contains(out, `"failed"`) {
		t.Errorf("the session of a crashed server is not failed:\n%s", out)
	}
}

func TestProxyRefusesAServerThatDoesNotStart(t *testing.T) {
	env := mcptest.Env(t)
	out, err := mcptest.Run(env, bin, "mcp", "proxy", "--name", "gone", "--", "/nonexistent/server")
	if err == nil || !strings.Contains(out, "start and initialise the wrapped server") {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := mcptest.Run(env, bin, "mcp", "proxy", "--", upstream); err == nil || !strings.Contains(out, "name") {
		t.Fatalf("without --name: %v\n%s", err, out)
	}
}
