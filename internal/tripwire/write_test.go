package tripwire

import (
	"path/filepath"
	"testing"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/verdict"
)

func wf(p string) *intent.Intent { return &intent.Intent{Action: intent.WriteFile, Path: p} }

// TestWriteFile holds write_file to the read rules (protected paths,
// symlinks, "..") and to its own: inside the workspace or a writable root,
// never a file another program runs.
func TestWriteFile(t *testing.T) {
	h := newHomeHost(t)
	tw := h.tw(t, h.project, nil)
	run(t, tw, []tcase{
		{"new file in the workspace", wf("sub/new.go"), verdict.OK, "", nil},
		{"absolute path in the workspace", wf(filepath.Join(h.project, "README")), verdict.OK, "", nil},
		{"ssh key", wf(filepath.Join(h.me, ".ssh", "authorized_keys")), verdict.PathProtected, "", nil},
		{"through a symlink into ~/.ssh", wf("keys/authorized_keys"), verdict.PathProtected, "", nil},
		{"data directory", wf(filepath.Join(h.dataDir, "tripwire.json")), verdict.PathProtected, "", nil},
		{"bashrc outside the workspace", wf(filepath.Join(h.me, ".bashrc")), verdict.PathWriteSensitive, ".bashrc", nil},
		{"home notes outside the workspace", wf(filepath.Join(h.me, "notes.txt")), verdict.PathOutsideRoots, "outside the workspace", nil},
		{"dot-dot", wf("../notes.txt"), verdict.PathTraversal, "", nil},
		{"git hook", wf(".git/hooks/pre-commit"), verdict.PathWriteSensitive, ".git/", nil},
		{"git config", wf(".git/config"), verdict.PathWriteSensitive, "", nil},
		{"a .git file", wf("sub/.git"), verdict.PathWriteSensitive, "", nil},
		{"workflow", wf(".github/workflows/ci.yml"), verdict.PathWriteSensitive, "workflows", nil},
		{"github readme", wf(".github/CODEOWNERS"), verdict.OK, "", nil},
		{"gitlab ci", wf(".gitlab-ci.yml"), verdict.PathWriteSensitive, "", nil},
		{"claude settings", wf(".claude/settings.json"), verdict.PathWriteSensitive, "", nil},
		{"claude local settings", wf(".claude/settings.local.json"), verdict.PathWriteSensitive, "", nil},
		{"claude command", wf(".claude/commands/review.md"), verdict.OK, "", nil},
		{"codex hooks", wf(".codex/hooks.json"), verdict.PathWriteSensitive, "", nil},
		{"mcp servers", wf(".mcp.json"), verdict.PathWriteSensitive, "", nil},
		{"envrc", wf("sub/.envrc"), verdict.PathWriteSensitive, "", nil},
		{"zshrc in the workspace", wf(".zshrc"), verdict.PathWriteSensitive, "", nil},
		{"tilde", wf("~/.bashrc"), verdict.PathInvalid, "", nil},
	})
	// A writable root opens writes outside the workspace, never to a
	// sensitive or protected file in it.
	wr := h.tw(t, h.project, map[string]any{"writable_roots": []string{h.me}})
	run(t, wr, []tcase{
		{"writable root", wf(filepath.Join(h.me, "notes.txt")), verdict.OK, "", nil},
		{"bashrc in a writable root", wf(filepath.Join(h.me, ".bashrc")), verdict.PathWriteSensitive, "", nil},
		{"ssh in a writable root", wf(filepath.Join(h.me, ".ssh", "config")), verdict.PathProtected, "", nil},
	})
}

func TestWriteFileFoldsCaseOnDarwin(t *testing.T) {
	ws := workspace(t)
	cfg := setup(t, ws, nil).Config()
	tw := New(cfg, Options{Workspace: ws, Resolver: publicDNS, GOOS: "darwin"})
	run(t, tw, []tcase{
		{"upper-case git dir", wf(".GIT/hooks/post-checkout"), verdict.PathWriteSensitive, "", nil},
		{"mixed-case workflows", wf(".GitHub/Workflows/x.yml"), verdict.PathWriteSensitive, "", nil},
	})
}
