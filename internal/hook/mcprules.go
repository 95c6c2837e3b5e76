package hook

import (
	"github.com/ironvise/ironvise/internal/policy"
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
