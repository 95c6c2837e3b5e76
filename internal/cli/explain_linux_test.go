//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestExecExplainsSandboxFailure: a write into the read-only workspace
// gets IronVise's line on exec's stderr, after the command's own message,
// and in the recorded observation; a command failing for a reason of its
// own gets none, and the command's output is printed as it was.
func TestExecExplainsSandboxFailure(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cliEnv(t, "DATABASE_URL", "")
	const why = "the workspace is read-only inside the sandbox, so writing there fails; the command can write only under $TMPDIR ("

	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "touch out.txt")
	own := "touch: cannot touch 'out.txt': Read-only file system\n"
	if code != 1 || !strings.Contains(errOut, own+"ironvise: "+why) {
		t.Fatalf("exit %d; want 1 with the command's message, then IronVise's line; stderr:\n%s", code, errOut)
	}
	var obs string
	for _, e := range events(t, env, sessionOf(t, errOut)) {
		if e.Type == ledger.TypeObservation {
			obs = string(e.Payload)
		}
	}
	if !strings.Contains(obs, `[exit 1]\n[sandbox: `+why) {
		t.Fatalf("the recorded observation lacks the explanation: %s", obs)
	}

	code, _, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--", "grep -q absent README")
	if code != 1 || strings.Contains(errOut, "ironvise: the") || strings.Contains(errOut, "sandbox: ") {
		t.Fatalf("exit %d; want 1 and no explanation; stderr:\n%s", code, errOut)
	}
}
