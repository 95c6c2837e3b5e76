//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestExecDaemonHonoursAChangedTripwireFile: serve reuses the compiled
// rules of tripwire.json only for the same bytes. A file rewritten between
// two requests, to the same size and with its old time stamp put back, is
// applied at the next request.
func TestExecDaemonHonoursAChangedTripwireFile(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	env := cliEnv(t)
	path := filepath.Join(env["ECTO_DATA_DIR"], "tripwire.json")
	write := func(target string) {
		t.Helper()
		doc := `{"extra_banned_arg_rules": [{"id": "no_deploy_target", "program": "echo", "operand": "` + target + `"}]}`
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		stamp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := os.Chtimes(path, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	write("prod")
	defer startServe(t, env, ws)()
	want := func(cmd string, code int) {
		t.Helper()
		if got, out, errOut := execDaemon(t, env, "--workspace", ws, "--", cmd); got != code {
			t.Fatalf("%q: exit %d, want %d\nstdout: %s\nstderr: %s", cmd, got, code, out, errOut)
		}
	}
	want("echo prod", ExitExecDenied)
	want("echo stag", 0)
	write("stag")
	want("echo prod", 0)
	want("echo stag", ExitExecDenied)
	write("prod")
	want("echo prod", ExitExecDenied)
}
