package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/intent"
)

// Proposal is one intent built from a tool call, as the JSON the schema
// check reads.
type Proposal struct {
	Action intent.Action
	// Target is the command, path or URL, for messages.
	Target string
	Raw    string
}

// MCPCall is an MCP tool call (tool_name mcp__<server>__<tool>).
type MCPCall struct {
	Server, Tool string
	Args         map[string]any
}

// Mapping is what a tool call becomes.
type Mapping struct {
	Proposals []Proposal
	// MCP is set for an MCP tool call, for the MCP tool rules.
	MCP *MCPCall
	// Unknown says why IronVise has no rule for the tool; the call is
	// blocked.
	Unknown string
}

// Tools maps a tool call of agent a to intents, for a session whose
// workspace is workspace. An error means the tool input is not what the
// agent documents for the tool (a missing or mistyped field): the call is
// blocked.
func Tools(a Agent, ev *Event, workspace string) (*Mapping, error) {
	in := map[string]any{}
	if len(ev.ToolInput) > 0 && string(ev.ToolInput) != "null" {
		if err := json.Unmarshal(ev.ToolInput, &in); err != nil {
			return nil, fmt.Errorf("tool_input of %s is not a JSON object: %w", ev.ToolName, err)
		}
	}
	b := builder{agent: a, ev: ev, in: in, m: &Mapping{}}
	switch name := ev.ToolName; {
	case name == "Bash":
		// Claude Code's Bash and every shell tool of Codex (shell,
		// exec_command, unified exec) arrive as Bash with
		// tool_input.command.
		cmd, err := b.str("command", true)
		if err != nil {
			return nil, err
		}
		// The agent's shell runs in the event's cwd, which a cd of an
		// earlier call may have moved out of the workspace: the command
		// is checked (and recorded) as run from there, so that a relative
		// path is resolved where the shell resolves it.
		if ev.Cwd != "" && filepath.Clean(ev.Cwd) != filepath.Clean(workspace) {
			cmd = "cd " + ShellQuote(ev.Cwd) + " && " + cmd
		}
		b.add(intent.RunCommand, map[string]any{"command": cmd}, cmd)
	case name == "Read" || name == "LS":
		key := "file_path"
		if name == "LS" {
			key = "path"
		}
		p, err := b.str(key, true)
		if err != nil {
			return nil, err
		}
		b.add(intent.ReadFile, map[string]any{"path": b.abs(p)}, p)
	case name == "Grep" || name == "Glob":
		// A search reads below its path (the working directory when none
		// is given): the path must be one a read may see.
		p, err := b.str("path", false)
		if err != nil {
			return nil, err
		}
		if p == "" {
			p = ev.Cwd
		}
		if p == "" {
			return nil, fmt.Errorf("%s has no path and the event no cwd: nothing to check", name)
		}
		b.add(intent.ReadFile, map[string]any{"path": b.abs(p)}, p)
		// A Glob pattern may lead elsewhere itself (/etc/**/*.conf,
		// ../other/*): the directory before its first wildcard is
		// searched too.
		if pat, _ := b.in["pattern"].(string); name == "Glob" {
			dir := pat
			if i := strings.IndexAny(pat, "*?[{"); i >= 0 {
				dir = filepath.Dir(pat[:i+1])
			}
			if dir != "" && dir != "." {
				b.add(intent.ReadFile, map[string]any{"path": b.abs(dir)}, pat)
			}
		}
	case name == "WebFetch":
		u, err := b.str("url", true)
		if err != nil {
			return nil, err
		}
		b.add(intent.HTTPGet, map[string]any{"url": u}, u)
	case name == "Write" || name == "Edit" || name == "MultiEdit" || name == "NotebookEdit":
		if err := b.write(name); err != nil {
			return nil, err
		}
	case name == "apply_patch":
		patch, err := b.str("command", true)
		if err != nil {
			return nil, err
		}
		paths := PatchPaths(patch)
		if len(paths) == 0 {
			return nil, fmt.Errorf("apply_patch names no file (no \"*** Add File:\", \"*** Update File:\", \"*** Delete File:\" or \"*** Move to:\" line)")
		}
		for _, p := range paths {
			b.add(intent.WriteFile, map[string]any{"path": b.abs(p)}, p)
		}
	case strings.HasPrefix(name, "mcp__"):
		server, tool, ok := strings.Cut(strings.TrimPrefix(name, "mcp__"), "__")
		if !ok || server == "" || tool == "" {
			return nil, fmt.Errorf("tool name %q is not of the form mcp__<server>__<tool>", name)
		}
		b.m.MCP = &MCPCall{Server: server, Tool: tool, Args: in}
		// Until policies carry MCP tool rules, the tripwire sees the
		// arguments that name files: a path an MCP server would open is
		// held to the rules of a read.
		for _, p := range pathArgs(in) {
			b.add(intent.ReadFile, map[string]any{"path": p}, p)
		}
	default:
		b.m.Unknown = fmt.Sprintf("IronVise has no rule for the tool %q, so it cannot check it and blocks it; limit the hook's matcher to the tools IronVise checks (ironvise hook install writes one)", name)
	}
	return b.m, b.err
}

type builder struct {
	agent Agent
	ev    *Event
	in    map[string]any
	m     *Mapping
	err   error
}

func (b *builder) str(key string, required bool) (string, error) {
	v, ok := b.in[key]
	if !ok || v == nil {
		if required {
			return "", fmt.Errorf("tool_input of %s has no %q", b.ev.ToolName, key)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("tool_input.%s of %s is not a string", key, b.ev.ToolName)
	}
	if required && s == "" {
		return "", fmt.Errorf("tool_input.%s of %s is empty", key, b.ev.ToolName)
	}
	return s, nil
}

// abs makes a relative path relative to the event's working directory,
// where the agent's tool resolves it. The join is by string, not
// filepath.Join: ".." components stay for the tripwire to refuse.
func (b *builder) abs(p string) string {
	if filepath.IsAbs(p) || b.ev.Cwd == "" || strings.HasPrefix(p, "~") {
		return p
	}
	return strings.TrimRight(b.ev.Cwd, `/\`) + string(filepath.Separator) + p
}

// write maps Claude Code's file tools: the path, and the SHA-256 and size
// of the text the tool writes (the whole content for Write, the new text
// for the edits), never the text itself.
func (b *builder) write(name string) error {
	key := "file_path"
	if name == "NotebookEdit" {
		key = "notebook_path"
	}
	p, err := b.str(key, true)
	if err != nil {
		return err
	}
	var text []string
	switch name {
	case "Write":
		c, err := b.str("content", false)
		if err != nil {
			return err
		}
		text = append(text, c)
	case "Edit":
		s, err := b.str("new_string", false)
		if err != nil {
			return err
		}
		text = append(text, s)
	case "NotebookEdit":
		s, err := b.str("new_source", false)
		if err != nil {
			return err
		}
		text = append(text, s)
	case "MultiEdit":
		edits, ok := b.in["edits"].([]any)
		if !ok {
			return fmt.Errorf("tool_input.edits of MultiEdit is not a list")
		}
		for i, e := range edits {
			m, ok := e.(map[string]any)
			s, sok := m["new_string"].(string)
			if !ok || !sok {
				return fmt.Errorf("tool_input.edits[%d] of MultiEdit has no new_string", i)
			}
			text = append(text, s)
		}
	}
	joined := strings.Join(text, "")
	sum := sha256.Sum256([]byte(joined))
	b.add(intent.WriteFile, map[string]any{"path": b.abs(p), "content_sha256": hex.EncodeToString(sum[:]), "content_bytes": len(joined)}, p)
	return nil
}

// add appends the intent for action with params. The justification says
// which agent's which tool asked, with the agent's own description of the
// call when it gave one (Claude Code's Bash has one).
func (b *builder) add(a intent.Action, params map[string]any, target string) {
	just := fmt.Sprintf("%s %s tool call", b.agent.Title(), b.ev.ToolName)
	if d, ok := b.in["description"].(string); ok && strings.TrimSpace(d) != "" {
		just += ": " + strings.TrimSpace(d)
	}
	if utf8.RuneCountInString(just) > intent.MaxJustificationRunes {
		just = string([]rune(just)[:intent.MaxJustificationRunes])
	}
	raw, err := json.Marshal(map[string]any{"action": a, "params": params, "justification": just})
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("encode the %s intent: %w", a, err)
	}
	b.m.Proposals = append(b.m.Proposals, Proposal{Action: a, Target: target, Raw: string(raw)})
}

// PatchPaths lists the files an apply_patch envelope touches, in order and
// without repeats: the targets of its Add, Update and Delete File lines
// and of its Move to lines.
func PatchPaths(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, pre := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(line, pre); ok {
				if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// pathArgs collects the string arguments of an MCP call that look like
// file paths (absolute, or starting with ~ or a ./ or ../), at any depth,
// in a stable order.
func pathArgs(v any) []string {
	var out []string
	walkLeaves(v, func(leaf any) {
		if x, ok := leaf.(string); ok && looksLikePath(x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	})
	return out
}

// walkLeaves calls leaf for every value of a decoded JSON value that is
// not a list or an object, depth first, objects in key order (so the
// order is stable).
func walkLeaves(v any, leaf func(any)) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			walkLeaves(e, leaf)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			walkLeaves(x[k], leaf)
		}
	default:
		leaf(x)
	}
}

// ShellQuote quotes s as one POSIX shell word.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func looksLikePath(s string) bool {
	if s == "" || len(s) > intent.MaxPathBytes || strings.ContainsAny(s, "\n\x00") {
		return false
	}
	return filepath.IsAbs(s) || strings.HasPrefix(s, "~") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../")
}
