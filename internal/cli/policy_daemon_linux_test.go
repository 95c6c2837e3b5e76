//go:build linux

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/execclient"
	"github.com/ironvise/ironvise/internal/localsock/wire"
)

// TestExecDaemonPolicyLookup: exec's daemon path chooses the same policy
// file as the in-process path. A bare name that names a file in the
// caller's directory runs in-process (only there are the caller's
// directory, the packs and the data dir seen at once); the daemon never
// looks a bare name up in its own working directory; a path is the
// caller's, with the same .toml rule.
func TestExecDaemonPolicyLookup(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	t.Chdir(dir)
	deny := []byte("name = \"Team\"\n\n[[command_rules]]\nprogram = \"nmap\"\ndecision = \"deny\"\nreason = \"team: no scans\"\n")
	if err := os.WriteFile("team.toml", deny, 0o644); err != nil {
		t.Fatal(err)
	}
	env := cliEnv(t)
	defer startServe(t, env, ws)()

	a := &app{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, lookup: config.MapLookup(env)}
	if handled, err := a.execViaDaemon(execOptions{Command: "true", Workspace: ws, Policy: "team", Justification: execclient.DefaultJustification}, &resultOutput{}); handled {
		t.Fatalf("--policy team with ./team.toml here went to the daemon (%v); want in-process", err)
	}
	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--policy", "team", "--", "nmap", "127.0.0.1")
	if code != ExitExecDenied || !strings.Contains(errOut, "team: no scans") {
		t.Fatalf("exec --policy team: exit %d %s", code, errOut)
	}

	send := func(policy string) (int, string) {
		t.Helper()
		conn, err := execclient.Dial(context.Background(), env["ECTO_DATA_DIR"])
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var out, errb bytes.Buffer
		req := &wire.Request{Command: "nmap 127.0.0.1", Workspace: ws, Policy: policy, Justification: execclient.DefaultJustification}
		code, msg := execclient.Exchange(context.Background(), conn, req, &out, &errb)
		if msg != nil {
			errb.WriteString(msg.Error())
		}
		return code, errb.String()
	}
	// The daemon's working directory (this one, in-process) holds
	// team.toml, but a bare name from a client is never looked up there.
	if code, msg := send("team"); code != ExitUsage || !strings.Contains(msg, "not found") || !strings.Contains(msg, "./team.toml (the caller's working directory)") {
		t.Errorf("daemon, bare name: exit %d %s; want not found", code, msg)
	}
	if code, msg := send(filepath.Join(dir, "team")); code != ExitExecDenied || !strings.Contains(msg, "team: no scans") {
		t.Errorf("daemon, path without .toml: exit %d %s", code, msg)
	}
}
