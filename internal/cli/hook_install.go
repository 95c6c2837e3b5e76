package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/hook"
)

// What `ironvise hook install` writes. Both agents read the same shape:
// hooks.<event> is a list of matcher groups, each with a list of handlers
// {"type": "command", "command": …, "timeout": seconds}.
var (
	// hookMatchers are the tools IronVise checks, per agent: a tool
	// outside the matcher never reaches the hook, and a tool the hook
	// does not know is blocked.
	hookMatchers = map[hook.Agent]string{
		hook.ClaudeCode: "Bash|Read|Write|Edit|MultiEdit|NotebookEdit|WebFetch|Grep|Glob|LS|mcp__.*",
		hook.Codex:      "Bash|apply_patch|mcp__.*",
	}
	hookEvents = []string{hook.EventPreToolUse, hook.EventPostToolUse, hook.EventSessionStart, hook.EventSessionEnd}
)

// hookTimeoutSeconds is the handler timeout written to the settings: above
// the hook's own --timeout, so that IronVise blocks before the agent gives
// up on it (a hook the agent times out does not block).
const hookTimeoutSeconds = 60

// hookSettingsPath is the settings file an install writes: Claude Code's
// .claude/settings.json, Codex's .codex/hooks.json, in the project
// (the working directory) or the user's home.
func hookSettingsPath(ag hook.Agent, user bool) (string, error) {
	base := "."
	if user {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the home directory: %w", err)
		}
		base = home
	}
	p := filepath.Join(base, ".claude", "settings.json")
	if ag == hook.Codex {
		p = filepath.Join(base, ".codex", "hooks.json")
	}
	return filepath.Abs(p)
}

type hookScope struct{ project, user bool }

func (s *hookScope) flags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&s.project, "project", false, "the project's settings in the working directory (the default)")
	cmd.Flags().BoolVar(&s.user, "user", false, "the user's settings in the home directory")
	cmd.MarkFlagsMutuallyExclusive("project", "user")
}

func (a *app) hookInstallCommand() *cobra.Command {
	var scope hookScope
	var command string
	cmd := &cobra.Command{
		Use:   "install claude-code|codex",
		Short: "Add IronVise's hooks to an agent's settings (a backup is kept)",
		Long: `Merges IronVise's hook entries (PreToolUse, PostToolUse, SessionStart,
SessionEnd) into Claude Code's .claude/settings.json or Codex's .codex/hooks.json,
in the project (--project, the default) or the user's home (--user). Other
settings and hooks are kept; the previous file is copied to <file>.bak.<time>
first. Running it again changes nothing.`,
		Example: `  ironvise hook install claude-code
  ironvise hook install codex --user`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{string(hook.ClaudeCode), string(hook.Codex)},
		RunE: func(cmd *cobra.Command, args []string) error {
			ag, err := hook.ParseAgent(args[0])
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			if command == "" {
				if command, err = hookBinaryCommand(ag); err != nil {
					return exitCode(ExitUsage, err)
				}
			}
			path, err := hookSettingsPath(ag, scope.user)
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			changed, backup, err := installHook(path, ag, command)
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			switch {
			case !changed:
				fmt.Fprintf(a.stdout, "%s already runs IronVise's hooks: %s (unchanged)\n", path, command)
			case backup != "":
				fmt.Fprintf(a.stdout, "installed IronVise's %s hooks in %s (previous file: %s)\n", ag.Title(), path, backup)
			default:
				fmt.Fprintf(a.stdout, "installed IronVise's %s hooks in %s (new file)\n", ag.Title(), path)
			}
			if ag == hook.Codex {
				fmt.Fprintln(a.stdout, "Codex runs a new or changed hook only after you trust it: open /hooks in Codex and trust IronVise's entries.")
			}
			fmt.Fprintf(a.stdout, "check it end to end: %s\n", a.command("hook", "doctor", string(ag), map[bool]string{true: "--user", false: "--project"}[scope.user]))
			return nil
		},
	}
	scope.flags(cmd)
	cmd.Flags().StringVar(&command, "command", "", "the hook command to write (default: this binary's absolute path, then 'hook <agent>')")
	return cmd
}

// hookBinaryCommand is the command line a settings entry runs: this
// binary's absolute path, quoted for the shell the agent runs it with.
func hookBinaryCommand(ag hook.Agent) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this binary's path: %w (pass --command)", err)
	}
	if res, err := filepath.EvalSymlinks(exe); err == nil {
		exe = res
	}
	return shellQuote(exe) + " hook " + string(ag), nil
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return hook.ShellQuote(s)
}

// isIronViseHook reports whether a handler's command is an IronVise hook
// for ag (whatever binary path it names).
func isIronViseHook(command string, ag hook.Agent) bool {
	return strings.HasSuffix(strings.TrimSpace(command), " hook "+string(ag))
}

// installHook merges the entries into the settings file at path and
// reports whether it changed it and where the previous file was copied.
func installHook(path string, ag hook.Agent, command string) (changed bool, backup string, err error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, "", fmt.Errorf("read %s: %w", path, err)
	}
	settings := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &settings); err != nil {
			return false, "", fmt.Errorf("%s is not a JSON object (%v): fix or move it, then install again", path, err)
		}
	}
	hooks, ok := settings["hooks"].(map[string]any)
	if settings["hooks"] != nil && !ok {
		return false, "", fmt.Errorf("%s: \"hooks\" is not an object: fix it, then install again", path)
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	for _, event := range hookEvents {
		groups, ok := hooks[event].([]any)
		if hooks[event] != nil && !ok {
			return false, "", fmt.Errorf("%s: hooks.%s is not a list: fix it, then install again", path, event)
		}
		hooks[event] = mergeHookGroup(groups, ag, event, command)
	}
	settings["hooks"] = hooks
	out, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return false, "", fmt.Errorf("encode %s: %w", path, err)
	}
	out = append(out, '\n')
	if old != nil && jsonEqual(old, out) {
		return false, "", nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, "", fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if old != nil {
		backup = path + ".bak." + time.Now().UTC().Format("20060102T150405Z")
		if err := os.WriteFile(backup, old, 0o600); err != nil {
			return false, "", fmt.Errorf("write the backup %s: %w (nothing was changed)", backup, err)
		}
	}
	tmp := path + ".ironvise.tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return false, "", fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, "", fmt.Errorf("write %s: %w", path, err)
	}
	return true, backup, nil
}

// mergeHookGroup updates IronVise's handler where a group already has one
// (its matcher and command set anew), or appends a group for it.
func mergeHookGroup(groups []any, ag hook.Agent, event, command string) []any {
	handler := map[string]any{"type": "command", "command": command, "timeout": hookTimeoutSeconds}
	matcher := ""
	if event == hook.EventPreToolUse || event == hook.EventPostToolUse {
		matcher = hookMatchers[ag]
	}
	for _, g := range groups {
		gm, ok := g.(map[string]any)
		if !ok {
			continue
		}
		hs, _ := gm["hooks"].([]any)
		for i, h := range hs {
			hm, ok := h.(map[string]any)
			if cmd, _ := hm["command"].(string); ok && isIronViseHook(cmd, ag) {
				hs[i] = handler
				if matcher != "" {
					gm["matcher"] = matcher
				}
				return groups
			}
		}
	}
	g := map[string]any{"hooks": []any{handler}}
	if matcher != "" {
		g["matcher"] = matcher
	}
	return append(groups, g)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// installedHook returns IronVise's PreToolUse command and matcher in the
// settings at path.
func installedHook(path string, ag hook.Agent) (command, matcher string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &settings); err != nil {
		return "", "", fmt.Errorf("%s is not valid settings JSON: %w", path, err)
	}
	for _, event := range hookEvents {
		found := false
		for _, g := range settings.Hooks[event] {
			for _, h := range g.Hooks {
				if h.Type == "command" && isIronViseHook(h.Command, ag) {
					found = true
					if event == hook.EventPreToolUse {
						command, matcher = h.Command, g.Matcher
					}
				}
			}
		}
		if !found {
			return "", "", fmt.Errorf("%s has no IronVise %s hook", path, event)
		}
	}
	return command, matcher, nil
}

func (a *app) hookDoctorCommand() *cobra.Command {
	var scope hookScope
	cmd := &cobra.Command{
		Use:   "doctor [claude-code|codex]",
		Short: "Check that an agent's settings run IronVise's hooks, end to end",
		Long: `Checks the installed settings entry (every event, the matcher covers the shell
tool) and then runs the installed command itself with a synthetic session: a read
inside a scratch workspace must be allowed (exit 0) and a read of ~/.ssh/id_rsa
blocked (exit 2); the session is then ended. Exits 1 with the fix when anything
is wrong.`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: []string{string(hook.ClaudeCode), string(hook.Codex)},
		RunE: func(cmd *cobra.Command, args []string) error {
			ag := hook.ClaudeCode
			if len(args) == 1 {
				var err error
				if ag, err = hook.ParseAgent(args[0]); err != nil {
					return exitCode(ExitUsage, err)
				}
			}
			path, err := hookSettingsPath(ag, scope.user)
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			install := a.command("hook", "install", string(ag), map[bool]string{true: "--user", false: "--project"}[scope.user])
			command, matcher, err := installedHook(path, ag)
			if err != nil {
				return exitCode(ExitDenied, fmt.Errorf("%w\nfix: run %s", err, install))
			}
			fmt.Fprintf(a.stdout, "ok   %s runs %q for %s\n", path, command, matcher)
			if !strings.Contains("|"+matcher+"|", "|Bash|") {
				return exitCode(ExitDenied, fmt.Errorf("the PreToolUse matcher %q does not cover Bash: shell commands are not checked\nfix: run %s", matcher, install))
			}
			if err := a.hookSmokeTest(ag, command); err != nil {
				return exitCode(ExitDenied, err)
			}
			return nil
		},
	}
	scope.flags(cmd)
	return cmd
}

// hookSmokeTest runs the installed command on a synthetic session the way
// the agent runs it (through sh -c): an allowed read, a blocked read of a
// credential, and the session's end.
func (a *app) hookSmokeTest(ag hook.Agent, command string) error {
	ws, err := os.MkdirTemp("", "ironvise-hook-doctor-")
	if err != nil {
		return fmt.Errorf("create a scratch workspace: %w", err)
	}
	defer os.RemoveAll(ws)
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("doctor\n"), 0o644); err != nil {
		return fmt.Errorf("create a scratch workspace: %w", err)
	}
	home, _ := os.UserHomeDir()
	sid := "ironvise-doctor-" + uuid.NewString()
	tool, allowIn, denyIn := "Read", map[string]any{"file_path": filepath.Join(ws, "README")}, map[string]any{"file_path": filepath.Join(home, ".ssh", "id_rsa")}
	if ag == hook.Codex {
		tool, allowIn, denyIn = "Bash", map[string]any{"command": "cat README"}, map[string]any{"command": "cat ~/.ssh/id_rsa"}
	}
	steps := []struct {
		what  string
		event map[string]any
		want  int
	}{
		{"an allowed " + tool, map[string]any{"hook_event_name": hook.EventPreToolUse, "tool_name": tool, "tool_input": allowIn, "tool_use_id": "doctor-1"}, hook.ExitOK},
		{"a " + tool + " of ~/.ssh/id_rsa", map[string]any{"hook_event_name": hook.EventPreToolUse, "tool_name": tool, "tool_input": denyIn, "tool_use_id": "doctor-2"}, hook.ExitBlock},
		{"the session's end", map[string]any{"hook_event_name": hook.EventSessionEnd, "reason": "other"}, hook.ExitOK},
	}
	for _, s := range steps {
		s.event["session_id"], s.event["cwd"], s.event["transcript_path"] = sid, ws, ""
		body, _ := json.Marshal(s.event)
		ctx, cancel := context.WithTimeout(a.ctx, 2*defaultHookTimeout)
		c := exec.CommandContext(ctx, "sh", "-c", command)
		c.Dir = ws
		c.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+ws)
		c.Stdin = bytes.NewReader(body)
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		cancel()
		code := 0
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			return fmt.Errorf("run %q: %w\nfix: check the command in the settings, or reinstall", command, err)
		}
		if code != s.want {
			return fmt.Errorf("%s: the hook exited %d, want %d (stderr: %s)\nfix: run the command by hand with the event on stdin to see why; a wrong binary path, an unreadable configuration or an unwritable data directory exit with another code, which %s treats as a non-blocking error", s.what, code, s.want, strings.TrimSpace(errOut.String()), ag.Title())
		}
		fmt.Fprintf(a.stdout, "ok   %s: exit %d\n", s.what, code)
	}
	return nil
}
