//go:build linux

package container

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/mounts/mountstest"
)

// TestPodmanMasksOtherNamesThroughMounts: the engine binds the workspace
// recursively, so a bind mount inside it of a home directory or of /etc
// shows their secrets in the container under the mount's name; the tier
// covers those names as it covers the protected paths themselves. It
// failed before the tier read the mount table: the container printed both
// secrets.
func TestPodmanMasksOtherNamesThroughMounts(t *testing.T) {
	home := workspace(t)
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("ALIAS-SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := workspace(t)
	mountstest.Bind(t, home, filepath.Join(ws, "home"))
	mountstest.Bind(t, "/etc", filepath.Join(ws, "etc"))
	shadow, _ := os.ReadFile("/etc/shadow")
	firstLine, _, _ := strings.Cut(string(shadow), "\n")
	tier := newPodman(t, func(o *sandbox.Options) { o.Hidden = []string{filepath.Join(home, ".ssh")} })
	res := run(t, tier, sandbox.Request{Workspace: ws, Command: `cat home/.ssh/id_ed25519; cat etc/shadow; grep -r ALIAS-SECRET /workspace/home; head -n 1 etc/passwd; cat notes.txt`})
	if strings.Contains(res.Stdout, "ALIAS-SECRET") || len(firstLine) > 8 && strings.Contains(res.Stdout, firstLine) {
		t.Fatalf("a secret was visible through a bind mount in the workspace: %q", res.Stdout)
	}
	if !strings.Contains(res.Stdout, "root:") || !strings.Contains(res.Stdout, "workspace file") {
		t.Fatalf("stdout %q; want the rest of the mounts and the workspace", res.Stdout)
	}
	// The bind mount of /etc is no workspace, as /etc is not.
	res = run(t, tier, sandbox.Request{Workspace: filepath.Join(ws, "etc"), Command: "cat shadow"})
	if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "system directory /etc under another name") {
		t.Fatalf("a workspace that is /etc by a bind mount: %s %q", res.Status, res.Reason)
	}
}
