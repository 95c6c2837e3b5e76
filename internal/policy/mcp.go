package policy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/ironvise/ironvise/internal/verdict"
)

// MCP tool rules (docs/policies.md#mcp-tool-rules) decide the tool calls
// that `ironvise mcp proxy` forwards to a wrapped MCP server. A rule names
// the server (the proxy's --name) and the tool by glob, and may test the
// call's arguments by name and regular expression. Evaluation is the same
// as for the other rules: every matching rule counts, the most restrictive
// decision wins (deny > require_approval > allow), and a call no rule
// matches takes default_mcp_tool_decision (allow when unset).

// Verdict codes of the MCP tool rules.
const (
	// PolicyMCPToolRule: a tool rule denied the call (or asked for an
	// approval nobody can give on the connection).
	PolicyMCPToolRule verdict.Code = "policy_mcp_tool_rule"
	// PolicyMCPToolDefault: no rule matched and the default is not allow.
	PolicyMCPToolDefault verdict.Code = "policy_mcp_tool_default"
)

type (
	rawMCPToolRule struct {
		ID       any          `toml:"id"`
		Server   any          `toml:"server"`
		Tool     any          `toml:"tool"`
		Args     []rawMCPArgs `toml:"args"`
		Decision any          `toml:"decision"`
		Reason   any          `toml:"reason"`
		Gate     any          `toml:"gate"`
	}
	rawMCPArgs struct {
		Name    any `toml:"name"`
		Pattern any `toml:"pattern"`
	}
)

var (
	mcpArgSchema      = &schema{keys: []string{"name", "pattern"}}
	mcpToolRuleSchema = &schema{keys: []string{"id", "server", "tool", "args", "decision", "reason", "gate"},
		lists: map[string]*schema{"args": mcpArgSchema}}
)

// mcpToolRule is one compiled MCP tool rule.
type mcpToolRule struct {
	rule
	servers []nameGlob // empty: every server
	tools   []nameGlob
	args    []mcpArgMatcher
}

// mcpArgMatcher tests one argument: it matches when the argument is present
// and its value (a string as is, anything else as compact JSON) matches the
// pattern. Name "*" tests every argument, and matches when any does.
type mcpArgMatcher struct {
	name    string
	pattern *regexp.Regexp
}

// compileMCPToolRule compiles mcp_tool_rules[i].
func (c *compiler) compileMCPToolRule(p *Policy, i int, r *rawMCPToolRule, ids map[string]bool) {
	mr := mcpToolRule{rule: c.compileRule(p, "mcp_tool_rules", i, r.ID, r.Decision, r.Reason, r.Gate, ids)}
	path := indexKey("mcp_tool_rules", i)
	globs := func(key string, v any) []nameGlob {
		list, idx, _ := c.list(path+"."+key, v, true)
		if list != nil && len(list) == 0 {
			c.fail(path+"."+key, "must not be empty")
		}
		var out []nameGlob
		for k, g := range list {
			// MCP names are case-sensitive on every platform.
			ng, err := compileNameGlob(g, false)
			if err != nil {
				c.fail(elemPath(path+"."+key, idx[k]), "%v", strings.Replace(err.Error(), "programs are matched by basename", "tool and server names have no /", 1))
				continue
			}
			out = append(out, ng)
		}
		return out
	}
	if r.Tool == nil {
		c.fail(path+".tool", "required (a tool name or glob; \"*\" for every tool)")
	}
	mr.tools = globs("tool", r.Tool)
	mr.servers = globs("server", r.Server)
	for k := range r.Args {
		a := &r.Args[k]
		ap := indexKey(path+".args", k)
		var m mcpArgMatcher
		if s, ok := c.required(ap+".name", a.Name); ok {
			if s == "" {
				c.fail(ap+".name", "must not be empty (an argument name, or \"*\" for any argument)")
			}
			m.name = s
		}
		if s, ok := c.required(ap+".pattern", a.Pattern); ok {
			re, err := regexp.Compile(s)
			if err != nil {
				c.fail(ap+".pattern", "bad regex: %v", err)
			}
			m.pattern = re
		}
		mr.args = append(mr.args, m)
	}
	p.mcpToolRules = append(p.mcpToolRules, mr)
}

// matches reports whether the rule applies to a call.
func (r *mcpToolRule) matches(server, tool string, args map[string]any) bool {
	if len(r.servers) > 0 && !anyGlob(r.servers, server) {
		return false
	}
	if !anyGlob(r.tools, tool) {
		return false
	}
	for _, m := range r.args {
		if !m.matches(args) {
			return false
		}
	}
	return true
}

func anyGlob(gs []nameGlob, name string) bool {
	for i := range gs {
		if gs[i].match(name) {
			return true
		}
	}
	return false
}

func (m *mcpArgMatcher) matches(args map[string]any) bool {
	if m.pattern == nil {
		return false
	}
	if m.name != "*" {
		v, ok := args[m.name]
		return ok && m.pattern.MatchString(argText(v))
	}
	for _, v := range args {
		if m.pattern.MatchString(argText(v)) {
			return true
		}
	}
	return false
}

// argText is the text an argument matcher tests: a string as is, any other
// value as compact JSON (so a pattern can also reach into an object).
func argText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// HasMCPToolRules reports whether the policy has MCP tool rules or a
// default for them.
func (p *Policy) HasMCPToolRules() bool {
	return p != nil && (len(p.mcpToolRules) > 0 || p.mcpDefault != verdict.Allow)
}

// EvaluateMCPTool decides a call of tool on MCP server (the proxy's
// --name) with args: deny, require_approval (with the gates of the
// deciding rules) or allow. A nil policy allows.
func (p *Policy) EvaluateMCPTool(server, tool string, args map[string]any) verdict.Verdict {
	if p == nil {
		return verdict.New(verdict.CheckPolicy, verdict.Allow, verdict.OK, "no policy loaded")
	}
	var matched []*mcpToolRule
	best := verdict.Allow
	for i := range p.mcpToolRules {
		r := &p.mcpToolRules[i]
		if !r.matches(server, tool, args) {
			continue
		}
		matched = append(matched, r)
		if r.decision.Rank() > best.Rank() {
			best = r.decision
		}
	}
	call := fmt.Sprintf("tool %q of MCP server %q", tool, server)
	if len(matched) == 0 {
		switch p.mcpDefault {
		case verdict.Allow:
			return verdict.New(verdict.CheckPolicy, verdict.Allow, verdict.OK, "no mcp_tool_rules match "+call)
		case verdict.Deny:
			return verdict.Denial(verdict.CheckPolicy, PolicyMCPToolDefault,
				fmt.Sprintf("%s: no mcp_tool_rules match and default_mcp_tool_decision is deny (policy %s)", call, p.name)).WithRule("default_mcp_tool_decision")
		}
		v := verdict.New(verdict.CheckPolicy, verdict.RequireApproval, verdict.PolicyRequiresApproval,
			fmt.Sprintf("%s: no mcp_tool_rules match and default_mcp_tool_decision is require_approval (policy %s)", call, p.name)).WithRule("default_mcp_tool_decision")
		v.Gates = []string{DefaultGateID}
		return v
	}
	var ids, reasons, gates []string
	for _, r := range matched {
		if r.decision != best {
			continue
		}
		ids = append(ids, r.id)
		if r.reason != "" {
			reasons = append(reasons, r.reason)
		}
		g := r.gate
		if g == "" {
			g = DefaultGateID
		}
		if !contains(gates, g) {
			gates = append(gates, g)
		}
	}
	msg := fmt.Sprintf("%s matches mcp_tool_rules %s (policy %s)", call, strings.Join(ids, ", "), p.name)
	if len(reasons) > 0 {
		msg += ": " + strings.Join(reasons, "; ")
	}
	switch best {
	case verdict.Allow:
		return verdict.New(verdict.CheckPolicy, verdict.Allow, verdict.OK, msg).WithRule(ids[0])
	case verdict.Deny:
		return verdict.Denial(verdict.CheckPolicy, PolicyMCPToolRule, msg).WithRule(ids[0])
	}
	sort.Strings(gates)
	v := verdict.New(verdict.CheckPolicy, verdict.RequireApproval, verdict.PolicyRequiresApproval, msg).WithRule(ids[0])
	v.Gates = gates
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
