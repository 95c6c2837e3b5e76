package policy

import (
	"os"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

const mcpPolicy = `name = "mcp"
default_mcp_tool_decision = "allow"

[[mcp_tool_rules]]
id = "no-delete"
tool = "delete_*"
decision = "deny"
reason = "deleting is not part of the task"

[[mcp_tool_rules]]
id = "fs-etc"
server = "files"
tool = ["read", "write"]
args = [{ name = "path", pattern = "^/etc/" }]
decision = "deny"

[[mcp_tool_rules]]
id = "deploy-needs-a-human"
server = "ci*"
tool = "*"
decision = "require_approval"

[[mcp_tool_rules]]
id = "token-anywhere"
tool = "*"
decision = "deny"
[[mcp_tool_rules.args]]
name = "*"
pattern = "ghp_[A-Za-z0-9]{8,}"
`

func TestMCPToolRules(t *testing.T) {
	p, err := Parse("mcp.toml", []byte(mcpPolicy), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		server, tool string
		args         map[string]any
		want         verdict.Decision
		rule         string
	}{
		{"github", "delete_repo", nil, verdict.Deny, "no-delete"},
		{"github", "list_repos", nil, verdict.Allow, ""},
		{"files", "read", map[string]any{"path": "/etc/shadow"}, verdict.Deny, "fs-etc"},
		{"files", "read", map[string]any{"path": "/home/me/notes"}, verdict.Allow, ""},
		{"other", "read", map[string]any{"path": "/etc/shadow"}, verdict.Allow, ""},
		{"files", "read", map[string]any{}, verdict.Allow, ""},
		{"ci-prod", "deploy", nil, verdict.RequireApproval, "deploy-needs-a-human"},
		{"github", "comment", map[string]any{"body": map[string]any{"text": "ghp_abcdefgh1234"}}, verdict.Deny, "token-anywhere"},
		// Names are case-sensitive: DELETE_repo is another tool.
		{"github", "DELETE_repo", nil, verdict.Allow, ""},
	}
	for _, c := range cases {
		v := p.EvaluateMCPTool(c.server, c.tool, c.args)
		if v.Decision != c.want || (c.rule != "" && v.Rule != c.rule) || v.Check != verdict.CheckPolicy {
			t.Errorf("%s/%s %v: %+v; want %s by %q", c.server, c.tool, c.args, v, c.want, c.rule)
		}
	}
	if v := p.EvaluateMCPTool("github", "delete_repo", nil); !strings.Contains(v.Message, "deleting is not part of the task") || v.Code != PolicyMCPToolRule {
		t.Errorf("message %+v", v)
	}
	var nilPolicy *Policy
	if v := nilPolicy.EvaluateMCPTool("s", "t", nil); v.Decision != verdict.Allow {
		t.Errorf("nil policy: %+v", v)
	}
	d, err := Parse("d.toml", []byte("name = \"d\"\ndefault_mcp_tool_decision = \"deny\"\n[[mcp_tool_rules]]\ntool = \"ok\"\ndecision = \"allow\"\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := d.EvaluateMCPTool("s", "other", nil); v.Decision != verdict.Deny || v.Code != PolicyMCPToolDefault {
		t.Errorf("default deny: %+v", v)
	}
	if v := d.EvaluateMCPTool("s", "ok", nil); v.Decision != verdict.Allow {
		t.Errorf("allow rule under default deny: %+v", v)
	}
}

func TestMCPToolRulesStrict(t *testing.T) {
	cases := []struct{ body, want string }{
		{"[[mcp_tool_rules]]\ntool = \"x\"\ndecision = \"deny\"\ncommand = \"y\"\n", "mcp_tool_rules[0].command: unknown key"},
		{"[[mcp_tool_rules]]\ndecision = \"deny\"\n", "mcp_tool_rules[0].tool: required"},
		{"[[mcp_tool_rules]]\ntool = \"x\"\n", "mcp_tool_rules[0].decision: required"},
		{"[[mcp_tool_rules]]\ntool = \"x\"\ndecision = \"block\"\n", "unknown decision \"block\""},
		{"[[mcp_tool_rules]]\ntool = \"x\"\ndecision = \"deny\"\nargs = [{ name = \"p\", pattern = \"(\" }]\n", "mcp_tool_rules[0].args[0].pattern: bad regex"},
		{"[[mcp_tool_rules]]\ntool = \"x\"\ndecision = \"deny\"\nargs = [{ name = \"p\", regex = \"a\" }]\n", "mcp_tool_rules[0].args[0].regex: unknown key"},
		{"[[mcp_tool_rules]]\ntool = \"x\"\ndecision = \"deny\"\nargs = [{ name = \"p\" }]\n", "mcp_tool_rules[0].args[0].pattern: required"},
		{"[[mcp_tool_rules]]\ntool = \"a/b\"\ndecision = \"deny\"\n", "mcp_tool_rules[0].tool"},
		{"[[mcp_tool_rules]]\ntool = []\ndecision = \"deny\"\n", "must not be empty"},
		{"[[mcp_tool_rules]]\nTool = \"x\"\ndecision = \"deny\"\n", "keys are case-sensitive"},
		{"mcp_tool_rules = { tool = \"x\" }\n", "expected an array of tables"},
		{"default_mcp_tool_decision = \"maybe\"\n", "default_mcp_tool_decision: unknown decision"},
		{"[[mcp_tool_rules]]\nid = \"a\"\ntool = \"x\"\ndecision = \"deny\"\n[[mcp_tool_rules]]\nid = \"a\"\ntool = \"y\"\ndecision = \"deny\"\n", "duplicate rule id"},
	}
	for _, c := range cases {
		_, err := Parse("bad.toml", []byte("name = \"bad\"\n"+c.body), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v; want %q", c.body, err, c.want)
		}
	}
}

// The example of docs/policies.md#mcp-tool-rules loads and decides as the
// page says.
func TestMCPToolRulesDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/policies.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "## MCP tool rules\n")
	_, block, ok2 := strings.Cut(sec, "```toml\n")
	block, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/policies.md has no toml example under ## MCP tool rules")
	}
	p, err := Parse("doc.toml", []byte(block), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		server, tool string
		args         map[string]any
		want         verdict.Decision
	}{
		{"github", "delete_file", nil, verdict.Deny},
		{"fs", "read_text_file", map[string]any{"path": "/etc/passwd"}, verdict.Deny},
		{"fs", "read_text_file", map[string]any{"path": "/srv/app/README"}, verdict.Allow},
		{"github", "create_issue", map[string]any{"body": "token ghp_0123456789abcdefghijABCDEFGHIJ"}, verdict.Deny},
		{"github", "create_issue", map[string]any{"body": "hello"}, verdict.Allow},
	} {
		if v := p.EvaluateMCPTool(c.server, c.tool, c.args); v.Decision != c.want {
			t.Errorf("%s/%s %v: %+v; want %s", c.server, c.tool, c.args, v, c.want)
		}
	}
}
