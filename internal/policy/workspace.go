package policy

import (
	"path"
	"slices"
	"strings"
)

// The [workspace] section (docs/policies.md#workspace) narrows the
// workspace mode the operator configured (ECTO_SANDBOX_WORKSPACE) for the
// sessions of this policy, and names the paths a command may not change
// in overlay mode:
//
//	[workspace]
//	mode = "ro"                                             # or "overlay"
//	forbidden_paths = [".git/hooks/**", ".github/**", "**/.env"]
//
// As with [network], the configuration is the ceiling: a policy can turn
// overlay mode off (mode = "ro") but not on. mode = "overlay" states that
// the policy's sessions expect writable workspaces; the session that
// composes the two refuses to start when the configuration says ro, so the
// mismatch is named at the start, not as a refused write later. The globs
// are checked here for their syntax (anchored, slash-separated, `**` as a
// whole component, path.Match within a component); the session compiles
// them again with the overlay package's matcher, which is authoritative.

// Workspace modes a policy may state.
const (
	// WorkspaceModeRO keeps the workspace read-only for the policy's
	// sessions, whatever the configuration allows.
	WorkspaceModeRO = "ro"
	// WorkspaceModeOverlay states that the policy's sessions write into an
	// overlay (ECTO_SANDBOX_WORKSPACE=overlay).
	WorkspaceModeOverlay = "overlay"
)

type rawWorkspace struct {
	Mode           any `toml:"mode"`
	ForbiddenPaths any `toml:"forbidden_paths"`
}

var workspaceSchema = &schema{keys: []string{"mode", "forbidden_paths"}}

// Workspace is a policy's [workspace] section.
type Workspace struct {
	// Mode is "" (the configuration decides), WorkspaceModeRO or
	// WorkspaceModeOverlay.
	Mode string
	// ForbiddenPaths are globs relative to the workspace root: a command
	// whose change set touches one fails and its changes are discarded.
	ForbiddenPaths []string
}

// Workspace returns the policy's [workspace] section and whether the
// policy has one. A nil policy has none.
func (p *Policy) Workspace() (Workspace, bool) {
	if p == nil || p.workspace == nil {
		return Workspace{}, false
	}
	w := *p.workspace
	w.ForbiddenPaths = slices.Clone(w.ForbiddenPaths)
	return w, true
}

func (c *compiler) compileWorkspace(p *Policy, r *rawWorkspace) {
	if r == nil {
		return
	}
	w := &Workspace{}
	if s, ok := c.str("workspace.mode", r.Mode); ok {
		switch s {
		case WorkspaceModeRO, WorkspaceModeOverlay:
			w.Mode = s
		default:
			c.fail("workspace.mode", "unknown mode %q (allowed: ro, overlay)", s)
		}
	}
	list, idx, _ := c.list("workspace.forbidden_paths", r.ForbiddenPaths, false)
	for k, e := range list {
		if msg := forbiddenGlob(e); msg != "" {
			c.fail(elemPath("workspace.forbidden_paths", idx[k]), "%q: %s", e, msg)
			continue
		}
		if !slices.Contains(w.ForbiddenPaths, e) {
			w.ForbiddenPaths = append(w.ForbiddenPaths, e)
		}
	}
	p.workspace = w
}

// forbiddenGlob checks the syntax of one forbidden_paths glob; msg says
// what is wrong. A malformed glob is an error, never a glob that matches
// nothing: a typo must not open a hole.
func forbiddenGlob(g string) (msg string) {
	switch {
	case strings.TrimSpace(g) == "":
		return "must not be empty"
	case g != strings.TrimSpace(g):
		return "has leading or trailing spaces"
	case strings.HasPrefix(g, "/"):
		return "is absolute; globs are relative to the workspace root (write .git/hooks/**, not /.git/hooks/**)"
	case strings.HasSuffix(g, "/"):
		return "ends with a slash; write dir/** for a directory and everything under it"
	}
	for _, comp := range strings.Split(g, "/") {
		switch {
		case comp == "":
			return "has an empty path component (//)"
		case comp == "." || comp == "..":
			return "has a . or .. component; globs name paths inside the workspace"
		case comp != "**" && strings.Contains(comp, "**"):
			return "** must be a whole path component (a/**/b), not part of one"
		}
		if _, err := path.Match(comp, ""); err != nil {
			return "malformed pattern in component " + comp + " (path.Match syntax: *, ?, [class], \\ escapes)"
		}
	}
	return ""
}
