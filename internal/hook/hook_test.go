package hook

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/intent"
)

func TestParseEvent(t *testing.T) {
	ok := `{"session_id":"s","transcript_path":"/t","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"x","permission_mode":"default","model":"m","turn_id":"t"}`
	ev, err := ParseEvent([]byte(ok))
	if err != nil || ev.ToolName != "Bash" || ev.SessionID != "s" || ev.Cwd != "/w" || ev.ToolUseID != "x" {
		t.Fatalf("%+v %v", ev, err)
	}
	for _, c := range []struct{ name, raw, want string }{
		{"not JSON", `{`, "not a JSON object"},
		{"array", `[]`, "not a JSON object"},
		{"string", `"x"`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"trailing", ok + ok, "data after"},
		{"no event", `{"session_id":"s"}`, "no hook_event_name"},
		{"no session", `{"hook_event_name":"Stop"}`, "no session_id"},
		{"no tool", `{"session_id":"s","hook_event_name":"PostToolUse"}`, "no tool_name"},
		{"tool name not a string", `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":1}`, "not a JSON object"},
		{"invalid UTF-8", "{\"session_id\":\"\xff\",\"hook_event_name\":\"Stop\"}", "UTF-8"},
	} {
		if _, err := ParseEvent([]byte(c.raw)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
	if _, err := ReadEvent(strings.NewReader(strings.Repeat(" ", MaxEventBytes+1))); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversize: %v", err)
	}
	if EventName([]byte(`{"hook_event_name":"PostToolUse","tool_input":7}`)) != "PostToolUse" || EventName([]byte("{")) != "" {
		t.Error("EventName")
	}
}

func mapped(t *testing.T, a Agent, tool string, input any) *Mapping {
	t.Helper()
	b, _ := json.Marshal(input)
	m, err := Tools(a, &Event{SessionID: "s", Cwd: "/w", HookEventName: EventPreToolUse, ToolName: tool, ToolInput: b}, "/w")
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return m
}

func intentOf(t *testing.T, p Proposal) *intent.Intent {
	t.Helper()
	in, err := intent.Parse(p.Raw, intent.Options{MinJustification: 5})
	if err != nil {
		t.Fatalf("%s: %v", p.Raw, err)
	}
	return in
}

func TestToolsMapping(t *testing.T) {
	cases := []struct {
		agent  Agent
		tool   string
		input  any
		action intent.Action
		target string
	}{
		{ClaudeCode, "Bash", map[string]any{"command": "go test ./...", "description": "Run tests"}, intent.RunCommand, "go test ./..."},
		{ClaudeCode, "Read", map[string]any{"file_path": "/w/a.go"}, intent.ReadFile, "/w/a.go"},
		{ClaudeCode, "Read", map[string]any{"file_path": "rel.go"}, intent.ReadFile, "/w/rel.go"},
		{ClaudeCode, "Grep", map[string]any{"pattern": "x", "path": "/w/src"}, intent.ReadFile, "/w/src"},
		{ClaudeCode, "Glob", map[string]any{"pattern": "*.go"}, intent.ReadFile, "/w"},
		{ClaudeCode, "LS", map[string]any{"path": "/w"}, intent.ReadFile, "/w"},
		{ClaudeCode, "WebFetch", map[string]any{"url": "https://example.com/", "prompt": "p"}, intent.HTTPGet, "https://example.com/"},
		{ClaudeCode, "Write", map[string]any{"file_path": "/w/a", "content": "secret text"}, intent.WriteFile, "/w/a"},
		{ClaudeCode, "Edit", map[string]any{"file_path": "/w/a", "old_string": "x", "new_string": "y"}, intent.WriteFile, "/w/a"},
		{ClaudeCode, "MultiEdit", map[string]any{"file_path": "/w/a", "edits": []any{map[string]any{"old_string": "x", "new_string": "y"}}}, intent.WriteFile, "/w/a"},
		{ClaudeCode, "NotebookEdit", map[string]any{"notebook_path": "/w/n.ipynb", "new_source": "print(1)"}, intent.WriteFile, "/w/n.ipynb"},
		{Codex, "Bash", map[string]any{"command": "ls"}, intent.RunCommand, "ls"},
		{ClaudeCode, "mcp__fs__read", map[string]any{"path": "/etc/shadow", "n": 3}, intent.ReadFile, "/etc/shadow"},
	}
	for _, c := range cases {
		m := mapped(t, c.agent, c.tool, c.input)
		if len(m.Proposals) != 1 {
			t.Fatalf("%s: %d proposals", c.tool, len(m.Proposals))
		}
		in := intentOf(t, m.Proposals[0])
		if in.Action != c.action || in.Target() != c.target {
			t.Errorf("%s: %s %q; want %s %q", c.tool, in.Action, in.Target(), c.action, c.target)
		}
		if !strings.Contains(in.Justification, c.agent.Title()+" "+c.tool) {
			t.Errorf("%s: justification %q", c.tool, in.Justification)
		}
		// The content of a write never enters the intent.
		if strings.Contains(m.Proposals[0].Raw, "secret text") {
			t.Errorf("%s: the intent holds the written content: %s", c.tool, m.Proposals[0].Raw)
		}
	}
	w := intentOf(t, mapped(t, ClaudeCode, "Write", map[string]any{"file_path": "/w/a", "content": "abc"}).Proposals[0])
	if w.Write == nil || w.Write.SHA256 != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" || *w.Write.Bytes != 3 {
		t.Errorf("write info %+v", w.Write)
	}
	for pat, want := range map[string]string{"/root/.ssh/*": "/root/.ssh", "../other/**/*.go": "/w/../other", "src/*.go": "/w/src"} {
		g := mapped(t, ClaudeCode, "Glob", map[string]any{"pattern": pat})
		if len(g.Proposals) != 2 || intentOf(t, g.Proposals[1]).Path != want {
			t.Errorf("glob %q: %+v; want a check of %s", pat, g.Proposals, want)
		}
	}
	if m := mapped(t, ClaudeCode, "TodoWrite", map[string]any{}); m.Unknown == "" || len(m.Proposals) != 0 {
		t.Errorf("unknown tool: %+v", m)
	}
	if m := mapped(t, Codex, "mcp__search__query", map[string]any{"q": "hooks"}); m.MCP == nil || m.MCP.Server != "search" || m.MCP.Tool != "query" || len(m.Proposals) != 0 {
		t.Errorf("mcp without paths: %+v", m)
	}
	for _, c := range []struct {
		tool  string
		input string
	}{
		{"Bash", `{}`},
		{"Bash", `{"command":["rm","-rf","/"]}`},
		{"Bash", `{"command":""}`},
		{"Bash", `"ls"`},
		{"Read", `{"path":"/w/a"}`},
		{"MultiEdit", `{"file_path":"/w/a","edits":"x"}`},
		{"apply_patch", `{"command":"no files here"}`},
		{"mcp__broken", `{}`},
	} {
		if _, err := Tools(ClaudeCode, &Event{Cwd: "/w", ToolName: c.tool, ToolInput: json.RawMessage(c.input)}, "/w"); err == nil {
			t.Errorf("%s %s: mapped; want an error (blocked)", c.tool, c.input)
		}
	}
}

// TestBashCwd: a shell that an earlier cd moved out of the workspace runs
// the next command there; the intent says so.
func TestBashCwd(t *testing.T) {
	m, err := Tools(ClaudeCode, &Event{Cwd: "/home/me/it's", ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"cat .ssh/id_rsa"}`)}, "/w")
	if err != nil {
		t.Fatal(err)
	}
	if got := intentOf(t, m.Proposals[0]).Command; got != `cd '/home/me/it'\''s' && cat .ssh/id_rsa` {
		t.Errorf("command %q", got)
	}
}

func TestApplyPatch(t *testing.T) {
	patch := "*** Begin Patch\r\n*** Update File: src/a.go\r\n*** Move to: src/b.go\n@@\n-x\n+y\n*** Add File: ../escape.txt\n+z\n*** Delete File: src/a.go\n*** End Patch\n"
	if got := PatchPaths(patch); !slices.Equal(got, []string{"src/a.go", "src/b.go", "../escape.txt"}) {
		t.Errorf("paths %q", got)
	}
	m := mapped(t, Codex, "apply_patch", map[string]any{"command": patch})
	var targets []string
	for _, p := range m.Proposals {
		targets = append(targets, intentOf(t, p).Path)
	}
	// ".." survives for the tripwire to refuse.
	if !slices.Equal(targets, []string{"/w/src/a.go", "/w/src/b.go", "/w/../escape.txt"}) {
		t.Errorf("targets %q", targets)
	}
}

func TestAnswers(t *testing.T) {
	deny := Answer{Decision: Deny, Reason: "no", Event: EventPreToolUse}
	for _, a := range Agents {
		out, errText, code := a.Command(deny)
		if code != ExitBlock || out != nil || !strings.Contains(errText, "no") {
			t.Errorf("%s deny: %q %q %d", a, out, errText, code)
		}
		out, _, code = a.Command(Answer{Decision: Allow, Event: EventPreToolUse})
		if code != ExitOK || string(out) != "{}" {
			t.Errorf("%s allow: %q %d", a, out, code)
		}
		var j map[string]map[string]string
		json.Unmarshal(a.JSON(deny), &j)
		if j["hookSpecificOutput"]["permissionDecision"] != "deny" || j["hookSpecificOutput"]["permissionDecisionReason"] != "no" {
			t.Errorf("%s deny JSON %s", a, a.JSON(deny))
		}
	}
	ask := Answer{Decision: Ask, Reason: "gate", Event: EventPreToolUse}
	if out, _, code := ClaudeCode.Command(ask); code != 0 || !strings.Contains(string(out), `"permissionDecision":"ask"`) {
		t.Errorf("claude ask: %s %d", out, code)
	}
	if _, _, code := Codex.Command(ask); code != ExitBlock {
		t.Errorf("codex ask: exit %d; want a block", code)
	}
	if j := string(Codex.JSON(ask)); !strings.Contains(j, `"permissionDecision":"deny"`) {
		t.Errorf("codex ask JSON %s; want deny", j)
	}
	warn := Answer{Decision: Allow, Warn: true, Reason: "inj", Context: "ctx", Event: EventPostToolUse}
	if j := string(ClaudeCode.JSON(warn)); !strings.Contains(j, `"decision":"block"`) || !strings.Contains(j, `"additionalContext":"ctx"`) {
		t.Errorf("post warn %s", j)
	}
	if j := string(ClaudeCode.JSON(Blocked("", errors.New("x")))); !strings.Contains(j, `"decision":"block"`) {
		t.Errorf("blocked without an event %s", j)
	}
}

func TestToolOutput(t *testing.T) {
	got := ToolOutput(json.RawMessage(`{"stdout":"a\"b\nc","stderr":"","n":3,"nested":[{"x":"y"}]}`))
	if got != "3\ny\n\na\"b\nc\n" {
		t.Errorf("%q", got)
	}
	if ToolOutput(json.RawMessage(`"plain"`)) != "plain\n" || ToolOutput(nil) != "" {
		t.Error("string output")
	}
}

// TestHandlePanicBlocks: a panic while deciding (here, an Env without a
// ledger) is a block, never an allow, and the state lock is usable after.
func TestHandlePanicBlocks(t *testing.T) {
	dir := t.TempDir()
	l, err := Lock(dir, ClaudeCode, "s", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ev := &Event{SessionID: "s", Cwd: "/w", HookEventName: EventPreToolUse, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls"}`)}
	ans := (&Env{Agent: ClaudeCode, Workspace: "/w"}).Handle(t.Context(), l, ev)
	if ans.Decision != Deny || !strings.Contains(ans.Reason, "internal error") {
		t.Fatalf("answer %+v; want a block for the internal error", ans)
	}
	if _, _, code := ClaudeCode.Command(ans); code != ExitBlock {
		t.Errorf("exit %d; want 2", code)
	}
	// A second process waits for the lock, then gives up with a block.
	if _, err := Lock(dir, ClaudeCode, "s", 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "held it") {
		t.Errorf("second lock: %v; want a timeout", err)
	}
}
