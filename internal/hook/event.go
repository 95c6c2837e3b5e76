// Package hook puts IronVise behind the hooks of agents that run their own
// tools — Claude Code and Codex — so that every tool call passes the
// checks before it runs and lands in the ledger.
//
// # How a hook event is decided
//
// The agent sends one JSON event per hook (on stdin for a command hook, as
// the body of an HTTP hook). Its PreToolUse event names the tool and its
// input; [Proposals] turns that into the intents IronVise knows — a shell
// command into run_command, a read into read_file, a fetch into http_get,
// a write or an edit (apply_patch included) into write_file, a search into
// read_file checks of the searched path — and each intent runs the
// pipeline as a delegated step of the agent session's IronVise session:
// checked, recorded and committed, never executed (the agent runs its
// tool). The answer is written in the agent's own contract ([Agent]):
// deny blocks, a policy gate that wants a human answers "ask" where the
// agent can ask, allow otherwise.
//
// # Fail closed
//
// An agent treats most hook failures as "go ahead" (Claude Code blocks
// only on exit code 2; a non-2xx HTTP answer does not block). So every
// failure here — a payload that is not JSON, an oversized one, a missing
// tool name, a ledger that cannot be written or locked, a timeout, a panic
// — becomes an explicit block in the agent's contract ([Blocked]).
//
// # Limitations
//
// A hook sees what the agent says it will do, not what the tool does: a
// tool the agent runs differently from its input (a shell that expands a
// variable at run time, an MCP server that reads files) is only checked as
// far as its input shows. The sandbox does not apply: the agent runs its
// tools on the machine. MCP tool calls get the tripwire's path checks on
// path-shaped arguments and the policy's MCP tool rules ([PolicyMCPRules]).
package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxEventBytes bounds one hook event. A Write of a large file or the
// output of a long command travels inside the event; beyond this the
// event is refused, and so blocked.
const MaxEventBytes = 16 << 20

// Hook event names both agents send (hook_event_name).
const (
	EventPreToolUse   = "PreToolUse"
	EventPostToolUse  = "PostToolUse"
	EventSessionStart = "SessionStart"
	EventSessionEnd   = "SessionEnd"
)

// Event is one hook event: the fields both agents document as common
// (session_id, transcript_path, cwd, hook_event_name) and the tool
// fields of the tool events (tool_name, tool_input, tool_response,
// tool_use_id). Any other field the agent sends is its own business and
// is ignored: the payload's schema is the agent's, not IronVise's.
type Event struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolResponse   json.RawMessage `json:"tool_response"`
	ToolUseID      string          `json:"tool_use_id"`
	// Reason is why a session ended (SessionEnd).
	Reason string `json:"reason"`
}

// ErrTooLarge is returned for an event over MaxEventBytes.
var ErrTooLarge = fmt.Errorf("the hook event is larger than %d bytes (16 MiB)", MaxEventBytes)

// ReadEvent reads one event of at most MaxEventBytes from r.
func ReadEvent(r io.Reader) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxEventBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the hook event: %w", err)
	}
	if len(raw) > MaxEventBytes {
		return nil, ErrTooLarge
	}
	return raw, nil
}

// ParseEvent decodes one event. It refuses what cannot be decided on: not
// a single JSON object, invalid UTF-8, no session_id or hook_event_name,
// and a tool event without tool_name.
func ParseEvent(raw []byte) (*Event, error) {
	if len(raw) > MaxEventBytes {
		return nil, ErrTooLarge
	}
	if !utf8.Valid(raw) {
		return nil, errors.New("the hook event is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var ev Event
	if err := dec.Decode(&ev); err != nil {
		return nil, fmt.Errorf("the hook event is not a JSON object: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the hook event has data after its JSON object")
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, errors.New("the hook event is not a JSON object")
	}
	switch {
	case ev.HookEventName == "":
		return nil, errors.New("the hook event has no hook_event_name")
	case ev.SessionID == "":
		return nil, errors.New("the hook event has no session_id")
	case len(ev.SessionID) > 512:
		return nil, errors.New("the hook event's session_id is longer than 512 bytes")
	}
	if ev.HookEventName == EventPreToolUse || ev.HookEventName == EventPostToolUse {
		if ev.ToolName == "" {
			return nil, fmt.Errorf("the %s event has no tool_name", ev.HookEventName)
		}
	}
	return &ev, nil
}

// EventName reads hook_event_name from a payload that may not parse as an
// event, so that a block can still be answered in the event's own JSON
// shape; "" when it cannot be read.
func EventName(raw []byte) string {
	var ev struct {
		HookEventName string `json:"hook_event_name"`
	}
	if len(raw) > MaxEventBytes || json.Unmarshal(raw, &ev) != nil {
		return ""
	}
	return ev.HookEventName
}
