//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox/mounts/mountstest"
)

// TestProtectedPathsUnderAnotherName: a bind mount that shows the home
// directory inside a project gives its credential stores other names; the
// checks refuse those names as they refuse the stores' own (read_file reads
// the file itself, and an agent's hook lets its own tools read one). It
// failed before the list took in the mount table: read_file of the key
// through the bind mount was allowed.
func TestProtectedPathsUnderAnotherName(t *testing.T) {
	home, env := homeWorkspace(t)
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), []byte("project notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	mountstest.Bind(t, home, filepath.Join(project, "home"))
	checkCodes(t, env, project, []checkCase{
		{`{"action":"read_file","params":{"path":"home/.ssh/id_ed25519"},"justification":"read the key"}`, ExitDenied},
		{`{"action":"read_file","params":{"path":"home/.aws/credentials"},"justification":"read the key"}`, ExitDenied},
		{`{"action":"run_command","params":{"command":"cat home/.ssh/id_ed25519"},"justification":"read the key"}`, ExitDenied},
		{`{"action":"read_file","params":{"path":"home/notes.txt"},"justification":"read the notes"}`, ExitOK},
		{`{"action":"read_file","params":{"path":"notes.txt"},"justification":"read the notes"}`, ExitOK},
	})
}
