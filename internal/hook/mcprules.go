package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/redact"
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/verdict"
)

// PolicyMCPRules decides an agent's MCP tool calls by the policy's
// mcp_tool_rules and default_mcp_tool_decision (docs/policies.md#mcp-tool-rules),
// the rules `ironvise mcp proxy` applies. The agent's tool name
// mcp__<server>__<tool> gives the server and the tool.
type PolicyMCPRules struct{ Policy *policy.Policy }

// CheckMCPTool implements MCPRules: a deny blocks, require_approval asks
// (a block where the agent cannot ask), and no rules at all leave the
// call to the other checks.
func (r PolicyMCPRules) CheckMCPTool(c MCPCall) (Decision, string, bool) {
	if !r.Policy.HasMCPToolRules() {
		return Allow, "", false
	}
	v := r.Policy.EvaluateMCPTool(c.Server, c.Tool, c.Args)
	switch v.Decision {
	case verdict.Allow:
		return Allow, "", true
	case verdict.RequireApproval:
		return Ask, reasonOf(string(v.Check), string(v.Code), v.Message), true
	}
	return Deny, reasonOf(string(v.Check), string(v.Code), v.Message), true
}

// EventMCPCall is the event an agent's MCP tool call is recorded as: the
// type `ironvise mcp proxy` records its calls with.
const EventMCPCall = "mcp_tool_call"

// mcpCallEvent is the payload of an agent's mcp_tool_call.
type mcpCallEvent struct {
	// Step is the number of the session's last step when the call came:
	// the path checks of its arguments, if any, are that step and those
	// before it.
	Step   int    `json:"step"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Arguments are the call's arguments as JSON, credentials redacted
	// and capped; ArgumentsSHA256 commits to them as the agent sent them.
	Arguments       string   `json:"arguments"`
	ArgumentsSHA256 string   `json:"arguments_sha256"`
	Decision        Decision `json:"decision"`
	Reason          string   `json:"reason,omitempty"`
	// ExecutedBy is "agent": the agent calls the tool, not IronVise.
	ExecutedBy string `json:"executed_by"`
}

// maxRecordedArguments caps the recorded arguments; the hash covers them
// whole.
const maxRecordedArguments = 16 << 10

// recordMCPCall appends the agent's MCP call and its decision to the
// session.
func (e *Env) recordMCPCall(ctx context.Context, session uuid.UUID, step int, c MCPCall, d Decision, reason string) error {
	raw, err := json.Marshal(c.Args)
	if err != nil {
		return fmt.Errorf("record the MCP call: encode its arguments: %w", err)
	}
	sum := sha256.Sum256(raw)
	red := redact.ForSession(session.String())
	ev := mcpCallEvent{Step: step, Server: c.Server, Tool: c.Tool, Arguments: scan.CutText(red.String(string(raw)), maxRecordedArguments),
		ArgumentsSHA256: hex.EncodeToString(sum[:]), Decision: d, Reason: red.String(reason), ExecutedBy: "agent"}
	if _, err := e.Runtime.Ledger.Append(ctx, session, EventMCPCall, ev); err != nil {
		return fmt.Errorf("record the MCP call: %w", err)
	}
	return nil
}
