package hook

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Agent is an agent whose hooks IronVise answers.
type Agent string

// The agents.
const (
	ClaudeCode Agent = "claude-code"
	Codex      Agent = "codex"
)

// Agents lists the agents, for usage messages.
var Agents = []Agent{ClaudeCode, Codex}

// ParseAgent reads an agent name.
func ParseAgent(s string) (Agent, error) {
	for _, a := range Agents {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown agent %q (known: claude-code, codex)", s)
}

// Title is the agent's name for people.
func (a Agent) Title() string {
	if a == Codex {
		return "Codex"
	}
	return "Claude Code"
}

// CanAsk reports whether the agent's PreToolUse hook can hand a decision
// to its user. Claude Code's permissionDecision takes "ask"; Codex's
// PreToolUse honours only a denial (its other decisions are not
// supported and let the call through), so a gate that wants a human
// blocks there.
func (a Agent) CanAsk() bool { return a == ClaudeCode }

// Decision is IronVise's answer to one hook event.
type Decision string

// Decisions.
const (
	// Allow lets the call go on to the agent's own permission rules: an
	// allow from IronVise never skips the agent's prompt.
	Allow Decision = "allow"
	Deny  Decision = "deny"
	Ask   Decision = "ask"
)

// Answer is the outcome of one event.
type Answer struct {
	Decision Decision
	// Reason is shown to the model (deny), to the user (ask), or kept
	// for the log.
	Reason string
	// Context is told to the model after a tool ran (PostToolUse): what
	// the output scan found.
	Context string
	// Warn marks a PostToolUse answer that must reach the model (an
	// injection in the tool's output).
	Warn bool
	// Event is the hook_event_name answered ("" when unknown).
	Event string
	// Session is the IronVise session that recorded the event, if any.
	Session string
}

// Blocked is the answer to anything that went wrong: fail closed.
func Blocked(event string, err error) Answer {
	return Answer{Decision: Deny, Event: event, Reason: "IronVise blocked this call because it could not check it: " + err.Error()}
}

// Exit codes of a command hook. Both agents block a PreToolUse call on
// exit code 2 and show its stderr to the model; exit code 0 passes the
// JSON on stdout; any other code is a non-blocking error, so IronVise
// never uses one for a decision.
const (
	ExitOK    = 0
	ExitBlock = 2
)

// Command renders an answer for a command hook: what to print on stdout
// and stderr, and the exit code.
func (a Agent) Command(ans Answer) (stdout []byte, stderr string, code int) {
	switch {
	case ans.Decision == Deny:
		// Exit 2 with the reason on stderr blocks in both agents, for
		// every event that can block; stdout is then ignored.
		return nil, "ironvise: " + ans.Reason + "\n", ExitBlock
	case ans.Decision == Ask && a.CanAsk():
		return a.JSON(ans), "", ExitOK
	case ans.Decision == Ask:
		return nil, "ironvise: " + ans.Reason + "\n", ExitBlock
	}
	return a.JSON(ans), "", ExitOK
}

// JSON is the answer as the agent's JSON output (a command hook's stdout,
// an HTTP hook's body): hookSpecificOutput.permissionDecision "deny" or
// "ask" with permissionDecisionReason for PreToolUse; "decision": "block"
// with a reason and hookSpecificOutput.additionalContext for a PostToolUse
// whose output must reach the model. An allow is an empty object: the
// agent's own permission rules still apply.
func (a Agent) JSON(ans Answer) []byte {
	out := map[string]any{}
	switch {
	case ans.Event == EventPreToolUse && (ans.Decision == Deny || ans.Decision == Ask):
		d := ans.Decision
		if d == Ask && !a.CanAsk() {
			d = Deny
		}
		out["hookSpecificOutput"] = map[string]any{
			"hookEventName": EventPreToolUse, "permissionDecision": string(d), "permissionDecisionReason": ans.Reason,
		}
	case ans.Event == EventPostToolUse && (ans.Warn || ans.Decision == Deny):
		out["decision"] = "block"
		out["reason"] = ans.Reason
		if ans.Context != "" {
			out["hookSpecificOutput"] = map[string]any{"hookEventName": EventPostToolUse, "additionalContext": ans.Context}
		}
	case ans.Decision == Deny:
		// An event without a permission decision (a session's start or
		// end) that failed: a plain block.
		out["decision"] = "block"
		out["reason"] = ans.Reason
	}
	b, err := json.Marshal(out)
	if err != nil {
		// Strings and maps only: a failure is a bug, and the answer must
		// still block.
		return []byte(`{"decision":"block","reason":"IronVise could not encode its answer"}`)
	}
	return b
}

// reasonOf joins a check's verdict into the text the model reads.
func reasonOf(check, code, message string) string {
	msg := strings.TrimSpace(message)
	return fmt.Sprintf("denied by the %s check (%s): %s", check, code, msg)
}
