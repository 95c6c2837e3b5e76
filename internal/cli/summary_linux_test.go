//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/execclient"
	"github.com/ironvise/ironvise/internal/localsock"
	"github.com/ironvise/ironvise/internal/localsock/wire"
	"github.com/ironvise/ironvise/internal/progname"
	"github.com/ironvise/ironvise/internal/session"
)

// decodeResult decodes stdout as exactly one --json result object, with
// no member the schema does not name.
func decodeResult(t *testing.T, stdout string) runResult {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var r runResult
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("stdout is not one result object: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value:\n%s", stdout)
	}
	if r.Format != RunResultFormat {
		t.Fatalf("format %q", r.Format)
	}
	return r
}

var sessionLine = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$`)

func TestExecJSONAndQuiet(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello from the workspace\n"), 0o644)
	env := cliEnv(t)

	code, out, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--json", "--no-daemon", "--", "cat a.txt; exit 3")
	r := decodeResult(t, out)
	if code != 3 || r.ExitCode != 3 || r.SessionID == nil || r.Status == nil || *r.Status != "completed" {
		t.Fatalf("exit %d, result %+v", code, r)
	}
	if r.Steps != 1 || r.Executed != 1 || r.Denied != 0 || r.Error != nil || len(r.Findings) == 0 || len(r.DeniedBy) == 0 {
		t.Errorf("counts: %+v", r)
	}
	if r.Verification == nil || !r.Verification.OK || !r.Verification.Sealed {
		t.Errorf("verification %+v", r.Verification)
	}
	// The command's own output is not lost: it went to stderr.
	if !strings.Contains(errOut, "hello from the workspace") || strings.Contains(out, "hello") {
		t.Errorf("the command's output: stdout %q stderr %q", out, errOut)
	}
	if c, _, _ := runCLI(t, env, "", "verify-session", *r.SessionID); c != 0 {
		t.Errorf("the result names session %s, which does not verify", *r.SessionID)
	}

	code, out, _ = runCLI(t, env, "", "exec", "--workspace", ws, "--json", "--no-daemon", "--", "rm -rf /")
	r = decodeResult(t, out)
	if code != ExitExecDenied || r.ExitCode != ExitExecDenied || r.Denied != 1 || r.DeniedBy["tripwire"] != 1 || r.Executed != 0 || *r.Status != "aborted" {
		t.Fatalf("denied: exit %d, result %+v", code, r)
	}

	code, out, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--quiet", "--no-daemon", "--", "cat a.txt; exit 4")
	if code != 4 || !sessionLine.MatchString(out) || !strings.Contains(errOut, "hello from the workspace") {
		t.Fatalf("--quiet: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Without a session there is no id to print; --json still reports.
	missing := filepath.Join(ws, "nope")
	code, out, _ = runCLI(t, env, "", "exec", "--workspace", missing, "--quiet", "--no-daemon", "--", "true")
	if code != ExitUsage || out != "" {
		t.Fatalf("--quiet without a session: exit %d, stdout %q", code, out)
	}
	code, out, _ = runCLI(t, env, "", "exec", "--workspace", missing, "--json", "--no-daemon", "--", "true")
	r = decodeResult(t, out)
	if code != ExitUsage || r.ExitCode != ExitUsage || r.SessionID != nil || r.Status != nil || r.Verification != nil || r.Error == nil || !strings.Contains(r.Error.Message, "does not exist") || r.OK {
		t.Fatalf("--json without a session: exit %d, result %+v", code, r)
	}

	code, out, errOut = runCLI(t, env, "", "exec", "--json", "--quiet", "--", "true")
	if code != ExitUsage || !strings.Contains(errOut, "--json and --quiet exclude each other") || jsonFailure(t, out)["error"].(map[string]any)["kind"] != "usage" {
		t.Fatalf("--json --quiet: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// execThroughDaemon runs exec with o through the daemon answering on
// env's data directory, failing the test if none handled it.
func execThroughDaemon(t *testing.T, env map[string]string, o execOptions) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &out, stderr: &errb, lookup: config.MapLookup(env)}
	res, err := newResultOutput(o.JSON, o.Quiet)
	if err != nil {
		t.Fatal(err)
	}
	handled, err := a.execViaDaemon(o, res)
	if !handled {
		t.Fatal("no daemon handled the exec")
	}
	code := 0
	if ee := (*exitError)(nil); err != nil && !errorsAs(err, &ee) {
		t.Fatalf("exec through the daemon: %v", err)
	} else if ee != nil {
		code = ee.code
		if ee.err != nil {
			errb.WriteString("ironvise: " + ee.err.Error() + "\n")
		}
	}
	return code, out.String(), errb.String()
}

// TestExecJSONThroughDaemon: the daemon renders --json and --quiet, and
// what the client prints is what --no-daemon prints, but for the session.
func TestExecJSONThroughDaemon(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644)
	env := cliEnv(t)
	defer startServe(t, env, ws)()
	for _, tc := range []struct {
		name string
		o    execOptions
	}{
		{"ran", execOptions{Command: "cat a.txt; exit 3"}},
		{"denied", execOptions{Command: "rm -rf /"}},
		{"no session", execOptions{Command: "true", Workspace: filepath.Join(ws, "nope")}},
		{"bad session", execOptions{Command: "true", Session: "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"json", "quiet"} {
				o := tc.o
				o.Justification = execclient.DefaultJustification
				if o.Workspace == "" {
					o.Workspace = ws
				}
				o.JSON, o.Quiet = mode == "json", mode == "quiet"
				dCode, dOut, dErr := execThroughDaemon(t, env, o)
				args := []string{"exec", "--no-daemon", "--" + mode, "--workspace", o.Workspace}
				if o.Session != "" {
					args = append(args, "--session", o.Session)
				}
				pCode, pOut, pErr := runCLI(t, env, "", append(args, "--", o.Command)...)
				if dCode != pCode || perSession.ReplaceAllString(dOut, "ID") != perSession.ReplaceAllString(pOut, "ID") ||
					perSession.ReplaceAllString(dErr, "ID") != perSession.ReplaceAllString(pErr, "ID") {
					t.Errorf("--%s: the daemon gave exit %d\n%s\n%s\n--no-daemon gave exit %d\n%s\n%s", mode, dCode, dOut, dErr, pCode, pOut, pErr)
				}
				if mode == "json" {
					if r := decodeResult(t, dOut); r.ExitCode != dCode {
						t.Errorf("the daemon's result says exit %d; exec exits %d", r.ExitCode, dCode)
					}
					// The whole command line through the daemon: a
					// failing exec prints the daemon's result and no
					// failure object after it.
					cargs := append([]string{"exec", "--json"}, args[3:]...)
					cCode, cOut, _ := runCLI(t, env, "", append(cargs, "--", o.Command)...)
					if r := decodeResult(t, cOut); cCode != pCode || r.ExitCode != cCode {
						t.Errorf("exec --json through the daemon: exit %d, result says %d; want %d", cCode, r.ExitCode, pCode)
					}
				}
			}
		})
	}
}

// TestExecJSONWhenDaemonRefuses: a daemon that refuses the request (one
// that does not know --json, say) leaves the result to the client, which
// still prints one object.
func TestExecJSONWhenDaemonRefuses(t *testing.T) {
	env := cliEnv(t)
	fakeDaemon(t, env, &localsock.Response{Code: ExitUsage, Error: "daemon: bad request", NotStarted: true})
	code, out, _ := runCLI(t, env, "", "exec", "--json", "--workspace", t.TempDir(), "--", "true")
	r := decodeResult(t, out)
	if code != ExitUsage || r.ExitCode != ExitUsage || r.SessionID != nil || r.Error == nil || r.Error.Message != "daemon: bad request" {
		t.Fatalf("exit %d, result %+v", code, r)
	}
}

// fakeDaemon listens on env's exec socket, reads one request and answers
// it with resp (nil: hangs up without an answer).
func fakeDaemon(t *testing.T, env map[string]string, resp *localsock.Response) {
	t.Helper()
	sock := wire.Path(env["ECTO_DATA_DIR"])
	os.MkdirAll(filepath.Dir(sock), 0o700)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var req localsock.Request
		localsock.ReadMessage(c, localsock.MaxRequest, &req)
		if resp != nil {
			localsock.WriteMessage(c, resp)
		}
	}()
}

// TestDaemonRefusesUnknownOutput: an output the daemon does not know is
// refused before anything runs.
func TestDaemonRefusesUnknownOutput(t *testing.T) {
	a := &app{ctx: context.Background(), lookup: config.MapLookup(cliEnv(t))}
	resp := a.daemonExec(context.Background(), nil, &localsock.Request{Command: "true", Workspace: t.TempDir(), Output: "xml"})
	if resp.Code != ExitUsage || !resp.NotStarted || !strings.Contains(resp.Error, `unknown output "xml"`) {
		t.Fatalf("%+v", resp)
	}
}

func TestAuditJSONAndQuiet(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(ws, "deploy.yaml"), []byte("service: api\nreplicas: 2\nimage: registry.example.com/api:latest\n"), 0o644)
	script := writeScript(t, strings.Split(strings.TrimSpace(ciScript), "\n")...)
	env := cliEnv(t, "LLM_BACKEND", "mock", "MOCK_LLM_SCRIPT", script)

	code, out, errOut := runCLI(t, env, "", "audit", "Review the deployment config", "--workspace", ws, "--json")
	r := decodeResult(t, out)
	if code != 0 || r.ExitCode != 0 || *r.Status != "completed" || r.Steps != 2 || r.Executed != 1 || r.Findings["medium"] != 1 || r.Findings["high"] != 0 {
		t.Fatalf("exit %d, result %+v", code, r)
	}
	if r.Verification == nil || !r.Verification.OK || r.Error != nil {
		t.Errorf("verification %+v, error %v", r.Verification, r.Error)
	}
	// The live log went to stderr.
	wantAll(t, "stderr", errOut, "read_file", "completed (complete", "verify: ironvise verify-session "+*r.SessionID)

	code, out, errOut = runCLI(t, env, "", "audit", "Review the deployment config", "--workspace", ws, "--quiet")
	if code != 0 || !sessionLine.MatchString(out) || !strings.Contains(errOut, "verify: ironvise verify-session "+strings.TrimSpace(out)) {
		t.Fatalf("--quiet: exit %d, stdout %q\n%s", code, out, errOut)
	}

	// A session that does not complete: exit 1, and the id is still printed.
	env["MOCK_LLM_SCRIPT"] = writeScript(t, `{"role":"agent","content":"{\"action\":\"read_file\",\"params\":{\"path\":\"/etc/shadow\"},\"justification\":\"read the password hashes\"}"}`)
	code, out, _ = runCLI(t, env, "", "audit", "Review the deployment config", "--workspace", ws, "--quiet")
	if code != ExitDenied || !sessionLine.MatchString(out) {
		t.Fatalf("an aborted session with --quiet: exit %d, stdout %q", code, out)
	}
	code, out, _ = runCLI(t, env, "", "audit", "Review the deployment config", "--workspace", ws, "--json")
	if r := decodeResult(t, out); code != ExitDenied || r.ExitCode != ExitDenied || r.SessionID == nil || *r.Status == "completed" || r.DeniedBy["tripwire"] < 1 {
		t.Fatalf("an aborted session with --json: exit %d, result %+v", code, r)
	}

	// Before a session: a configuration error.
	code, out, _ = runCLI(t, cliEnv(t, "LLM_BACKEND", "ollama"), "", "audit", "goal", "--workspace", ws, "--json")
	if r := decodeResult(t, out); code != ExitUsage || r.ExitCode != ExitUsage || r.SessionID != nil || r.Error == nil || !strings.Contains(r.Error.Message, "GUARD_LLM_BACKEND") || r.Error.Kind != "config" {
		t.Fatalf("a configuration error with --json: exit %d, result %+v", code, r)
	}
	code, out, errOut = runCLI(t, env, "", "audit", "goal", "--json", "--quiet")
	if code != ExitUsage || !strings.Contains(errOut, "exclude each other") || jsonFailure(t, out)["error"].(map[string]any)["kind"] != "usage" {
		t.Fatalf("--json --quiet: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func errorsAs(err error, target **exitError) bool { return errors.As(err, target) }

// TestDaemonKeepsPolicyTextAsWritten: the text of a policy file that does
// not load reaches the exec client as written: the client rewrites the
// hints in the response's error, so the daemon sends that text with the
// command's stderr, which the client passes through.
func TestDaemonKeepsPolicyTextAsWritten(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "p.toml")
	text := "name = \"t\"\nversion = \"1\"\napproval_gates = [ { id = \"g\", when = \"action == 'ironvise serve'\", timeout_seconds = 60 } ]\n"
	if err := os.WriteFile(pol, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &app{ctx: context.Background(), lookup: config.MapLookup(cliEnv(t))}
	resp := a.daemonExec(context.Background(), &session.Runtime{}, &localsock.Request{Command: "true", Workspace: t.TempDir(), Policy: pol})
	// What the client prints: the stderr bytes, then the error with its
	// hints naming the binary the user ran.
	shown := string(resp.Stderr)
	if resp.Error != "" {
		shown += "ironvise: " + progname.Rewrite(resp.Error, "/opt/x/bin/ironvise") + "\n"
	}
	if resp.Code != ExitUsage || !strings.Contains(shown, "policy not loaded") || !strings.Contains(shown, "unknown action 'ironvise serve'") {
		t.Fatalf("exit %d, the client shows %q; want the policy's 'ironvise serve' unchanged", resp.Code, shown)
	}
}
