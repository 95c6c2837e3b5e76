package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// jsonFailure decodes stdout as exactly one JSON value and returns it.
func jsonFailure(t *testing.T, stdout string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%q", err, stdout)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("stdout holds more than one JSON value:\n%s", stdout)
	}
	return v
}

// TestJSONFailures: every command with --json, failing, prints exactly one
// JSON value on stdout: ok false and an error object whose code is the
// exit status, and keeps its exit status and its message on stderr.
func TestJSONFailures(t *testing.T) {
	e := newLedgerEnv(t)
	missing := "0190f1c2-7a3b-7cde-8f01-23456789abcd"
	bad := map[string]string{"ECTO_DATA_DIR": e.dir, "HOME": e.dir, "SCANNER_SENSITIVITY": "extreme"}
	noDir := filepath.Join(t.TempDir(), "absent", "issuer.pub")
	junk := filepath.Join(t.TempDir(), "junk.elc")
	os.WriteFile(junk, []byte("{}"), 0o644)
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		kind    string
		session string
		stdout  string // a field of the command's own result, when it printed one
	}{
		{"version: extra argument", e.env, []string{"version", "--json", "x"}, 2, "usage", "", ""},
		{"exec: no such workspace", e.env, []string{"exec", "--json", "--no-daemon", "--workspace", filepath.Join(e.dir, "absent"), "--", "true"}, 2, "error", "", "format"},
		{"exec: --json with --quiet", e.env, []string{"exec", "--json", "--quiet", "--", "true"}, 2, "usage", "", ""},
		{"audit: configuration error", bad, []string{"audit", "goal", "--json"}, 2, "config", "", "format"},
		{"version: unknown flag after --json", e.env, []string{"version", "--json", "--bogus"}, 2, "usage", "", ""},
		{"version: unknown flag before --json", e.env, []string{"version", "--bogus", "--json"}, 2, "usage", "", ""},
		{"policy list: configuration error", bad, []string{"policy", "list", "--json"}, 2, "config", "", ""},
		{"sandbox doctor: unknown tier", e.env, []string{"sandbox", "doctor", "--json", "--tier", "nope"}, 2, "usage", "", ""},
		{"sessions: bad limit", e.env, []string{"sessions", "--json", "--limit", "0"}, 2, "usage", "", ""},
		{"replay: not a session id", e.env, []string{"replay", "nope", "--json"}, 2, "usage", "", ""},
		{"replay: unknown session", e.env, []string{"replay", missing, "--json"}, 2, "not_found", missing, ""},
		{"verify-session: not a session id", e.env, []string{"verify-session", "nope", "--json"}, 2, "usage", "", ""},
		{"verify-session: unknown session", e.env, []string{"verify-session", missing, "--json"}, 2, "not_found", missing, ""},
		{"diff: unknown session", e.env, []string{"diff", missing, "--json"}, 2, "not_found", missing, ""},
		{"apply: unknown session", e.env, []string{"apply", missing, "--json"}, 2, "not_found", missing, ""},
		{"discard: unknown session", e.env, []string{"discard", missing, "--json"}, 2, "not_found", missing, ""},
		{"verify-session: configuration error", bad, []string{"verify-session", missing, "--json"}, 2, "config", missing, ""},
		{"verify-certificate: no pin", e.env, []string{"verify-certificate", junk, "--json"}, 2, "usage", "", ""},
		{"verify-certificate: missing file", e.env, []string{"verify-certificate", filepath.Join(t.TempDir(), "x.elc"), "--allow-unpinned", "--json"}, 1, "failed", "", ""},
		{"verify-certificate: not a certificate", e.env, []string{"verify-certificate", junk, "--allow-unpinned", "--json"}, 1, "verification", "", "valid"},
		{"verify-vc: neither JWT nor file", e.env, []string{"verify-vc", "nope", "--allow-unpinned", "--json"}, 2, "usage", "", ""},
		{"verify-vc: invalid credential", e.env, []string{"verify-vc", "a.b.c", "--allow-unpinned", "--json"}, 1, "verification", "", "valid"},
		{"issuer-key: unwritable output", e.env, []string{"issuer-key", "--json", "--output", noDir}, 2, "error", "", ""},
		{"mcp pins: configuration error", bad, []string{"mcp", "pins", "--name", "x", "--json"}, 2, "config", "", ""},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.env, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d; want %d\nstdout %s\nstderr %s", code, tc.code, out, errOut)
			}
			if strings.TrimSpace(errOut) == "" && tc.stdout == "" {
				t.Errorf("nothing on stderr")
			}
			v := jsonFailure(t, out)
			if v["ok"] != false {
				t.Errorf("ok = %v; want false\n%s", v["ok"], out)
			}
			if tc.stdout != "" {
				if _, ok := v[tc.stdout]; !ok {
					t.Errorf("the command's own result lacks %q:\n%s", tc.stdout, out)
				}
			} else if v["command"] == "" || v["session_id"] != nilIfEmpty(tc.session) {
				t.Errorf("command %v, session_id %v; want session %q\n%s", v["command"], v["session_id"], tc.session, out)
			}
			e, _ := v["error"].(map[string]any)
			if e["kind"] != tc.kind || e["code"] != float64(tc.code) || e["message"] == "" || e["message"] == nil {
				t.Errorf("error = %v; want kind %s, code %d and a message", e, tc.kind, tc.code)
			}
		})
		covered[strings.SplitN(tc.name, ":", 2)[0]] = true
	}
	// Every command that has --json is in the table above.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("json") != nil && !covered[commandName(c)] {
			t.Errorf("%s has --json but no failure case here", commandName(c))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk((&app{}).rootCommand())
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestJSONFailureOnlyWithJSON: without --json (or with --json=false)
// stdout stays empty on failure, and a command that printed its own JSON
// result is not followed by a second value.
func TestJSONFailureOnlyWithJSON(t *testing.T) {
	e := newLedgerEnv(t)
	for _, args := range [][]string{
		{"verify-session", "nope"},
		{"verify-session", "nope", "--json=false"},
		{"verify-session", "nope", "--", "--json"},
	} {
		if code, out, _ := runCLI(t, e.env, "", args...); code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing", args, code, out)
		}
	}
	code, out, _ := runCLI(t, e.env, "", "verify-session", e.sealed.String(), "--json")
	if v := jsonFailure(t, out); code != 0 || v["ok"] != true || v["error"] != nil {
		t.Errorf("a passing verification: exit %d\n%s", code, out)
	}
	if !jsonArg([]string{"--json=1"}) || jsonArg([]string{"--json=no"}) || jsonArg([]string{"--", "--json"}) {
		t.Error("jsonArg misreads --json=VALUE")
	}
	var buf bytes.Buffer
	a := &app{stdout: &buf}
	a.printFailureJSON(nil, []string{"--json"}, exitCode(2, nil), 2)
	if buf.Len() != 0 {
		t.Errorf("no command: printed %q", buf.String())
	}
}

// TestNoJSONFailureWithoutJSONFlag: a command that ran without --json
// prints no JSON on failure, even when an argument "--json" was the value
// of another flag.
func TestNoJSONFailureWithoutJSONFlag(t *testing.T) {
	code, out, errOut := runCLI(t, cliEnv(t), "", "exec", "--no-daemon", "--justification", "--json", "--policy", "no-such-pack", "--", "true")
	if code != ExitUsage || out != "" || !strings.Contains(errOut, "policy not loaded") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, no stdout", code, out, errOut, ExitUsage)
	}
}
