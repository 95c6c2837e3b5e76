package llm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/config"
)

const script = `{"role":"agent","content":"{\"action\":\"read_file\",\"params\":{\"path\":\"a\"},\"justification\":\"read a file\"}"}
{"role":"guard","content":"ALLOW"}

{"role":"agent","error":"connection reset by peer"}
{"role":"guard","content":"DENY: off goal","delay_ms":5}
{"role":"agent","content":"{\"action\":\"complete\"}"}
`

func TestParseScript(t *testing.T) {
	s, err := ParseScript([]byte(script))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	if len(s) != 5 || s[2].Error != "connection reset by peer" || s[3].Delay != 5*time.Millisecond || s[1].Role != ScriptGuard {
		t.Fatalf("entries = %+v", s)
	}
}

func TestParseScriptErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"unknown key", `{"role":"agent","content":"x","extra":1}`, `line 1: unknown key "extra"`},
		{"duplicate key", `{"role":"agent","content":"x","content":"y"}`, `line 1: $: duplicate key "content"`},
		{"bad role", `{"role":"user","content":"x"}`, `line 1: role`},
		{"no role", `{"content":"x"}`, `line 1: role`},
		{"both content and error", `{"role":"agent","content":"x","error":"e"}`, "exactly one"},
		{"neither", `{"role":"guard"}`, "exactly one"},
		{"empty error", `{"role":"guard","error":""}`, "exactly one"},
		{"content not string", `{"role":"agent","content":{"action":"complete"}}`, "content: expected string"},
		{"negative delay", `{"role":"agent","content":"x","delay_ms":-1}`, "delay_ms"},
		{"fractional delay", `{"role":"agent","content":"x","delay_ms":1.5}`, "delay_ms"},
		{"huge delay", `{"role":"agent","content":"x","delay_ms":99999999999999999}`, "delay_ms"},
		{"not an object", `["agent","x"]`, "expected a JSON object"},
		{"trailing data", `{"role":"agent","content":"x"} {}`, "trailing data"},
		{"second line bad", "{\"role\":\"agent\",\"content\":\"x\"}\nnot json", "line 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScript([]byte(tc.in))
			if !errors.Is(err, ErrMockScript) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrMockScript containing %q", err, tc.want)
			}
		})
	}
}

func TestMockReplaysInOrder(t *testing.T) {
	s, _ := ParseScript([]byte(script))
	m := NewMock(s, MockOptions{})
	ctx := context.Background()
	r, err := m.Complete(ctx, Request{Kind: KindAgent})
	if err != nil || !strings.Contains(r.Text, "read_file") || r.Model != MockModel || m.Backend() != "mock" {
		t.Fatalf("first agent reply = %+v, %v", r, err)
	}
	if _, err := m.Complete(ctx, Request{Kind: KindAgent}); err == nil || !strings.Contains(err.Error(), "connection reset by peer") {
		t.Fatalf("second agent reply err = %v, want the scripted failure", err)
	}
	if r, err := m.Complete(ctx, Request{Kind: KindAgent}); err != nil || r.Text != `{"action":"complete"}` {
		t.Fatalf("third agent reply = %q, %v", r.Text, err)
	}
	if _, err := m.Complete(ctx, Request{Kind: KindAgent}); !errors.Is(err, ErrScriptExhausted) {
		t.Fatalf("exhausted err = %v", err)
	}
	// Guard lines are a separate sequence.
	for _, want := range []string{"ALLOW", "DENY: off goal", MockGuardDefault, MockGuardDefault} {
		if r, err := m.Complete(ctx, Request{Kind: KindGuard}); err != nil || r.Text != want {
			t.Fatalf("guard reply = %q, %v; want %q", r.Text, err, want)
		}
	}
}

func TestMockGuardReplyOverride(t *testing.T) {
	s, _ := ParseScript([]byte(script))
	for _, reply := range []string{"ALLOW", "", "DENY: x"} {
		m := NewMock(s, MockOptions{GuardReply: reply, GuardReplySet: true})
		for range 3 {
			if r, err := m.Complete(context.Background(), Request{Kind: KindGuard}); err != nil || r.Text != reply {
				t.Fatalf("guard reply = %q, %v; want GUARD_MOCK_REPLY %q", r.Text, err, reply)
			}
		}
	}
}

func TestMockChatEcho(t *testing.T) {
	m := NewMock(nil, MockOptions{})
	r, err := m.Complete(context.Background(), Request{Kind: KindChat, System: "s", Messages: []Message{
		{RoleUser, "first"}, {RoleAssistant, "mock: first"}, {RoleUser, "Hello, how are you?"},
	}})
	if err != nil || r.Text != "mock: Hello, how are you?" || r.Model != "mock-v1" {
		t.Fatalf("chat = %+v, %v", r, err)
	}
}

func TestMockDelayHonoursContext(t *testing.T) {
	s, _ := ParseScript([]byte(`{"role":"guard","content":"ALLOW","delay_ms":5000}`))
	m := NewMock(s, MockOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Complete(ctx, Request{Kind: KindGuard})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %v; want a prompt deadline error", err, time.Since(start))
	}
}

func TestMockFromConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "script.jsonl")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	builtin := []byte(`{"role":"agent","content":"builtin"}` + "\n" + `{"role":"guard","content":"DENY: builtin guard"}`)

	t.Run("script file", func(t *testing.T) {
		c, err := New(config.LLM{Backend: "mock", MockScript: path, MockScriptIsSet: true}, Options{BuiltinScript: builtin})
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := c.Complete(context.Background(), Request{}); !strings.Contains(r.Text, "read_file") {
			t.Errorf("reply %q, want the file's first agent line", r.Text)
		}
	})
	t.Run("built-in script", func(t *testing.T) {
		c, err := New(config.LLM{Backend: "mock"}, Options{BuiltinScript: builtin})
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := c.Complete(context.Background(), Request{}); r.Text != "builtin" {
			t.Errorf("reply %q, want the built-in script", r.Text)
		}
	})
	t.Run("guard plays the script's guard lines", func(t *testing.T) {
		c, err := NewGuard(config.Guard{Backend: "mock", Model: "mock-v1"}, config.LLM{Backend: "mock"}, Options{BuiltinScript: builtin})
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := c.Complete(context.Background(), Request{Kind: KindGuard}); r.Text != "DENY: builtin guard" {
			t.Errorf("reply %q, want the built-in guard line", r.Text)
		}
	})
	t.Run("guard mock reply wins", func(t *testing.T) {
		c, err := NewGuard(config.Guard{Backend: "mock", MockReply: "ALLOW", MockReplySet: true}, config.LLM{}, Options{BuiltinScript: builtin})
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := c.Complete(context.Background(), Request{Kind: KindGuard}); r.Text != "ALLOW" {
			t.Errorf("reply %q, want GUARD_MOCK_REPLY", r.Text)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := New(config.LLM{Backend: "mock", MockScript: filepath.Join(dir, "nope"), MockScriptIsSet: true}, Options{})
		if err == nil || !strings.Contains(err.Error(), "MOCK_LLM_SCRIPT") {
			t.Errorf("err = %v, want one naming MOCK_LLM_SCRIPT", err)
		}
	})
	t.Run("bad file", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.jsonl")
		_ = os.WriteFile(bad, []byte("{\"role\":\"agent\",\"content\":\"x\"}\n{\"role\":\"agent\"}\n"), 0o600)
		_, err := New(config.LLM{Backend: "mock", MockScript: bad, MockScriptIsSet: true}, Options{})
		if !errors.Is(err, ErrMockScript) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "MOCK_LLM_SCRIPT") {
			t.Errorf("err = %v, want ErrMockScript naming the variable and line 2", err)
		}
	})
}

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(script))                                         // the documented format
	f.Add([]byte(`{"role":"agent","content":"x","content":"y"}`)) // duplicate key
	f.Add([]byte(`{"role":"guard","delay_ms":1e3,"content":""}`)) // exponent delay
	f.Add([]byte("\n\n\r\n"))                                     // blank lines only
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScript(data)
		if err != nil {
			if !errors.Is(err, ErrMockScript) {
				t.Fatalf("error %v does not wrap ErrMockScript", err)
			}
			return
		}
		for _, e := range s {
			if (e.Role != ScriptAgent && e.Role != ScriptGuard) || e.Delay < 0 || e.Delay > MaxScriptDelay {
				t.Fatalf("accepted invalid entry %+v", e)
			}
		}
	})
}
