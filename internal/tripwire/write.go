package tripwire

import (
	"fmt"
	"strings"

	"github.com/ironvise/ironvise/internal/verdict"
)

// Write rules (write_file). A write is checked like a read (protected
// paths, symlinks resolved, no "..") and then more narrowly: it must land
// in the workspace or a writable root, and never in a file that some other
// program later executes or that configures a gate. Writing such a file is
// running code at a time nobody checks it: a shell reads its startup files
// at every login, git runs .git/hooks and the commands .git/config names,
// a CI service runs its pipeline files with the repository's secrets, and
// an agent's hook settings decide whether this gate is asked at all.

// sensitiveNames are file names refused as write targets wherever they lie.
var sensitiveNames = []string{
	// Shell startup and line-editor files: every new shell runs them.
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
	".kshrc", ".cshrc", ".tcshrc", ".login", ".logout", ".inputrc", "config.fish",
	// direnv runs .envrc on entering the directory.
	".envrc",
	// CI pipelines named by a single file.
	".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml", "bitbucket-pipelines.yml",
	".drone.yml", "Jenkinsfile", ".gitmodules",
	// MCP client configuration: the servers an agent starts.
	".mcp.json",
}

// sensitiveDirs are directories (as a path component) whose contents are
// refused as write targets.
var sensitiveDirs = []string{
	".git",      // hooks, config (core.hooksPath, core.fsmonitor, aliases)
	".circleci", // CI pipelines
	".buildkite",
	".husky", // git hooks installed by npm
}

// sensitivePairs are a directory followed by a name (or a directory) that
// are refused: the CI and agent settings that live in shared directories.
var sensitivePairs = [][2]string{
	{".github", "workflows"},
	{".github", "actions"},
	{".claude", "settings.json"},
	{".claude", "settings.local.json"},
	{".claude", "hooks"},
	{".codex", "config.toml"},
	{".codex", "hooks.json"},
	{".vscode", "tasks.json"},
}

// checkWrite applies the write rules to a write_file path whose steps 1–4
// passed and that is not protected.
func (t *Tripwire) checkWrite(v PathView) *Problem {
	for _, p := range []string{v.Lexical, v.Resolved} {
		if why := t.sensitiveWrite(p); why != "" {
			return &Problem{verdict.PathWriteSensitive, fmt.Sprintf("write to %s refused: %s", quote(v.Raw), why)}
		}
	}
	roots := append([]string{t.workspace}, t.cfg.WritableRoots...)
	if !t.underAny(v.Resolved, roots) {
		return &Problem{verdict.PathOutsideRoots, fmt.Sprintf("write to %s is outside the workspace %s and writable_roots", v.Resolved, t.workspace)}
	}
	return nil
}

// sensitiveWrite says why writing the absolute path p runs code later, or
// returns "".
func (t *Tripwire) sensitiveWrite(p string) string {
	parts := t.splitRaw(p)
	eq := func(a, b string) bool {
		if t.foldCase {
			return strings.EqualFold(a, b)
		}
		return a == b
	}
	for i, c := range parts {
		last := i == len(parts)-1
		for _, d := range sensitiveDirs {
			if eq(c, d) {
				return fmt.Sprintf("files under %s/ are run or read as configuration by other programs", d)
			}
		}
		if last {
			for _, n := range sensitiveNames {
				if eq(c, n) {
					return fmt.Sprintf("%s is run by another program (a shell, git, CI or an agent's client)", n)
				}
			}
		}
		if i+1 < len(parts) {
			for _, pr := range sensitivePairs {
				if eq(c, pr[0]) && eq(parts[i+1], pr[1]) {
					return fmt.Sprintf("%s/%s holds code or settings that another program runs (CI, an agent's hooks, an editor's tasks)", pr[0], pr[1])
				}
			}
		}
	}
	return ""
}
