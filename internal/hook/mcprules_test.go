package hook

import (
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/policy"
)

// TestPolicyMCPRules: an agent's MCP tool call is decided by the policy's
// mcp_tool_rules (by server, tool and argument), a require_approval rule
// asks, and a policy without MCP tool rules leaves the call to the other
// checks.
func TestPolicyMCPRules(t *testing.T) {
	pol, err := policy.Parse("mcp.toml", []byte(`
name = "mcp"
[[mcp_tool_rules]]
id = "no-delete"
tool = "delete_*"
decision = "deny"
reason = "deleting is not part of the task"
[[mcp_tool_rules]]
id = "fs-no-etc"
server = "fs"
tool = "*"
args = [{ name = "path", pattern = '^/etc(/|$)' }]
decision = "deny"
[[mcp_tool_rules]]
id = "ask-deploy"
tool = "deploy"
decision = "require_approval"
`), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := PolicyMCPRules{Policy: pol}
	for _, tc := range []struct {
		call MCPCall
		want Decision
		in   string
	}{
		{MCPCall{Server: "github", Tool: "delete_repo"}, Deny, "no-delete"},
		{MCPCall{Server: "fs", Tool: "read_file", Args: map[string]any{"path": "/etc/shadow"}}, Deny, "fs-no-etc"},
		{MCPCall{Server: "fs", Tool: "read_file", Args: map[string]any{"path": "/home/u/notes"}}, Allow, ""},
		{MCPCall{Server: "other", Tool: "read_file", Args: map[string]any{"path": "/etc/shadow"}}, Allow, ""},
		{MCPCall{Server: "ci", Tool: "deploy"}, Ask, "ask-deploy"},
	} {
		d, why, ok := r.CheckMCPTool(tc.call)
		if !ok || d != tc.want || !strings.Contains(why, tc.in) {
			t.Errorf("%+v: got %s %q (rules applied: %v); want %s naming %q", tc.call, d, why, ok, tc.want, tc.in)
		}
	}
	none, err := policy.Parse("none.toml", []byte("name = \"none\"\n"), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := (PolicyMCPRules{Policy: none}).CheckMCPTool(MCPCall{Server: "fs", Tool: "delete_all"}); ok {
		t.Error("a policy without mcp_tool_rules decided an MCP call")
	}
	if _, _, ok := (PolicyMCPRules{}).CheckMCPTool(MCPCall{Server: "fs", Tool: "delete_all"}); ok {
		t.Error("no policy decided an MCP call")
	}
}
