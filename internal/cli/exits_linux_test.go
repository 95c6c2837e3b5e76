package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
)

// TestStandaloneExecLeavesItsWALOnlyBeforeExit: run as the ironvise
// process itself (Main, which exits right after), a standalone exec leaves
// its SQLite ledger's small WAL to the next process instead of
// checkpointing it on close; run as a library (Run, whose caller may go on
// using the process), it checkpoints and leaves none.
func TestStandaloneExecLeavesItsWALOnlyBeforeExit(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	for _, exits := range []bool{false, true} {
		env := cliEnv(t)
		var out, errb bytes.Buffer
		// Main's app, with the test's environment in place of the process's.
		a := &app{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &out, stderr: &errb, lookup: config.MapLookup(env), exits: exits}
		if code := a.run([]string{"ironvise", "exec", "--no-daemon", "--workspace", ws, "--", "true"}); code != 0 {
			t.Fatalf("exits %v: exec: exit %d, stderr %q", exits, code, errb.String())
		}
		fi, err := os.Stat(filepath.Join(env["ECTO_DATA_DIR"], "ledger.db-wal"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if left := err == nil && fi.Size() > 0; left != exits {
			t.Fatalf("exits %v: a WAL was left: %v; want %v", exits, left, exits)
		}
	}
}
