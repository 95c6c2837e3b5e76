package llm

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/strictjson"
)

// Script roles.
const (
	ScriptAgent = "agent"
	ScriptGuard = "guard"
)

// Mock script limits.
const (
	MaxScriptBytes = 16 << 20
	MaxScriptDelay = 10 * time.Minute
)

// MockGuardDefault is the mock guard's reply when GUARD_MOCK_REPLY is unset
// and the script has no guard line left
// (docs/design/checks.md#guard-protocol). It denies, so a forgotten guard
// script fails closed.
const MockGuardDefault = "DENY: mock guard"

// ScriptEntry is one line of a mock script (see the package doc).
type ScriptEntry struct {
	Role    string
	Content string
	// Error, when non-empty, makes the call fail with this message.
	Error string
	Delay time.Duration
}

// ParseScript parses a JSON-lines mock script strictly. Errors name the
// line (1-based) and wrap ErrMockScript.
func ParseScript(data []byte) ([]ScriptEntry, error) {
	if len(data) > MaxScriptBytes {
		return nil, fmt.Errorf("llm: mock script is %d bytes (max %d): %w", len(data), MaxScriptBytes, ErrMockScript)
	}
	var out []ScriptEntry
	for i, line := range bytes.Split(data, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		e, err := parseScriptLine(line)
		if err != nil {
			return nil, fmt.Errorf("llm: mock script line %d: %s: %w", i+1, err, ErrMockScript)
		}
		out = append(out, e)
	}
	return out, nil
}

func parseScriptLine(line []byte) (ScriptEntry, error) {
	var e ScriptEntry
	root, err := strictjson.Decode(line, 2)
	if err != nil {
		return e, err
	}
	if root.Kind != strictjson.Object {
		return e, fmt.Errorf("expected a JSON object, got %s", root.Kind)
	}
	hasContent := false
	for i, k := range root.Keys {
		v := root.Values[i]
		switch k {
		case "role", "content", "error":
			if v.Kind != strictjson.String {
				return e, fmt.Errorf("%s: expected string, got %s", k, v.Kind)
			}
			switch k {
			case "role":
				e.Role = v.Str
			case "content":
				e.Content, hasContent = v.Str, true
			case "error":
				e.Error = v.Str
			}
		case "delay_ms":
			n, err := strconv.ParseInt(v.Num.String(), 10, 64)
			if v.Kind != strictjson.Number || err != nil || n < 0 || n > MaxScriptDelay.Milliseconds() {
				return e, fmt.Errorf("delay_ms: expected an integer from 0 to %d", MaxScriptDelay.Milliseconds())
			}
			e.Delay = time.Duration(n) * time.Millisecond
		default:
			return e, fmt.Errorf("unknown key %q (allowed: role, content, error, delay_ms)", k)
		}
	}
	if e.Role != ScriptAgent && e.Role != ScriptGuard {
		return e, fmt.Errorf("role: expected \"agent\" or \"guard\", got %q", e.Role)
	}
	if hasContent == (e.Error != "") {
		return e, fmt.Errorf("exactly one of content and a non-empty error is required")
	}
	return e, nil
}

// MockOptions configure the mock guard.
type MockOptions struct {
	// GuardReply, when GuardReplySet, answers every guard request
	// (GUARD_MOCK_REPLY).
	GuardReply    string
	GuardReplySet bool
}

// Mock is the deterministic offline backend. It is safe for concurrent use;
// replies are handed out in script order.
type Mock struct {
	opt MockOptions

	mu        sync.Mutex
	agent     []ScriptEntry // guarded by mu
	guard     []ScriptEntry // guarded by mu
	nextAgent int           // guarded by mu
	nextGuard int           // guarded by mu
}

// NewMock returns a mock replaying script.
func NewMock(script []ScriptEntry, opt MockOptions) *Mock {
	m := &Mock{opt: opt}
	for _, e := range script {
		if e.Role == ScriptGuard {
			m.guard = append(m.guard, e)
		} else {
			m.agent = append(m.agent, e)
		}
	}
	return m
}

// Backend implements Client.
func (m *Mock) Backend() string { return BackendMock }

// Model implements Client.
func (m *Mock) Model() string { return MockModel }

// Complete implements Client.
func (m *Mock) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	var e ScriptEntry
	switch req.Kind {
	case KindChat:
		// docs/design/api.md#mock-backend: the reply is "mock: " and the message as
		// received.
		msg := ""
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == RoleUser {
				msg = req.Messages[i].Content
				break
			}
		}
		e = ScriptEntry{Content: "mock: " + msg}
	case KindGuard:
		e = m.nextGuardEntry()
	default:
		var ok bool
		if e, ok = m.nextAgentEntry(); !ok {
			return Response{}, fmt.Errorf("llm: mock: no agent reply left in the script (add lines with \"role\":\"agent\"): %w", ErrScriptExhausted)
		}
	}
	if err := sleepCtx(ctx, e.Delay); err != nil {
		return Response{}, fmt.Errorf("llm: mock: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Response{}, fmt.Errorf("llm: mock: %w", err)
	}
	if e.Error != "" {
		return Response{}, fmt.Errorf("llm: mock: scripted failure: %s", e.Error)
	}
	in := len(req.System)
	for _, msg := range req.Messages {
		in += len(msg.Content)
	}
	return Response{Text: e.Content, Model: MockModel, Latency: time.Since(start),
		Usage: Usage{InputTokens: in / 4, OutputTokens: len(e.Content) / 4, Reported: true}}, nil
}

func (m *Mock) nextAgentEntry() (ScriptEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nextAgent >= len(m.agent) {
		return ScriptEntry{}, false
	}
	m.nextAgent++
	return m.agent[m.nextAgent-1], true
}

func (m *Mock) nextGuardEntry() ScriptEntry {
	if m.opt.GuardReplySet {
		return ScriptEntry{Content: m.opt.GuardReply}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nextGuard >= len(m.guard) {
		return ScriptEntry{Content: MockGuardDefault}
	}
	m.nextGuard++
	return m.guard[m.nextGuard-1]
}
