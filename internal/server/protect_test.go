package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/secretpaths"
)

// TestServerRefusesWorkspaces: serve's API sessions all work in one
// workspace; New refuses the file-system root, a system directory and a
// workspace inside the data directory, and a missing protected list.
func TestServerRefusesWorkspaces(t *testing.T) {
	dataDir := t.TempDir()
	inside := filepath.Join(dataDir, "ws")
	if err := os.MkdirAll(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{"/", "/etc", "/usr", inside} {
		opts, _, _ := newOptions(t, tsOptions{dataDir: dataDir, workspace: ws})
		_, err := New(context.Background(), opts)
		if !errors.Is(err, secretpaths.ErrWorkspace) || !strings.Contains(err.Error(), "fix:") {
			t.Errorf("workspace %s: got %v; want a refusal naming the fix", ws, err)
		}
	}
	opts, _, _ := newOptions(t, tsOptions{dataDir: dataDir})
	opts.Protected = secretpaths.List{}
	if _, err := New(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "Protected") {
		t.Errorf("no protected list: got %v; want an error", err)
	}
}

// TestIntentsRefuseProtectedPaths: an API session's tripwire refuses the
// data directory and the credential stores the list names.
func TestIntentsRefuseProtectedPaths(t *testing.T) {
	dataDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dataDir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, tsOptions{dataDir: dataDir})
	id := ts.createSession(map[string]any{"goal": "inspect the notes", "agent_loop": false})
	for _, body := range []string{
		`{"action":"run_command","params":{"command":"cat ` + dataDir + `/keys/issuer.ed25519"},"justification":"read the issuer key"}`,
		`{"action":"read_file","params":{"path":"` + dataDir + `/tripwire.json"},"justification":"read the tripwire file"}`,
		`{"action":"run_command","params":{"command":"cat ~/.ssh/id_ed25519"},"justification":"read the ssh key"}`,
	} {
		r := ts.intent(id, body)
		if r["verdict"] != "deny" || r["check"] != "tripwire" || r["rule"] != "path_protected" || r["executed"] != false {
			t.Errorf("%s: %v; want a path_protected denial", body, r)
		}
	}
}
