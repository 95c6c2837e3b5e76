//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestExecMemoryHint: a command that runs out of address space under the
// default ECTO_SANDBOX_MEM_MIB gets one line naming the variable on exec's
// stderr and in the recorded observation; one that succeeds gets none.
func TestExecMemoryHint(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s is not installed (.ci/run installs it)", py)
	}
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	env := cliEnv(t, "DATABASE_URL", "")
	const hint = "the command seems to have run out of address space under ECTO_SANDBOX_MEM_MIB=512; raise it, for example ECTO_SANDBOX_MEM_MIB=4096"

	// 1 GiB in one allocation cannot fit in 512 MiB of address space.
	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", `python3 -c "bytearray(1 << 30)"`)
	if code != 1 || !strings.Contains(errOut, "MemoryError") {
		t.Fatalf("exit %d; want python's MemoryError (exit 1); stderr:\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "\nironvise: "+hint+"\n") {
		t.Fatalf("stderr lacks the hint line:\n%s", errOut)
	}
	var obs string
	for _, e := range events(t, env, sessionOf(t, errOut)) {
		if e.Type == ledger.TypeObservation {
			obs = string(e.Payload)
		}
	}
	if !strings.Contains(obs, "[sandbox: "+hint+"]") {
		t.Fatalf("the recorded observation lacks the hint: %s", obs)
	}

	code, _, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--", `python3 -c "bytearray(1 << 20)"`)
	if code != 0 || strings.Contains(errOut, "ECTO_SANDBOX_MEM_MIB") {
		t.Fatalf("exit %d; want 0 and no hint; stderr:\n%s", code, errOut)
	}
}
