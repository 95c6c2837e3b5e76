package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
)

// cliEnv returns an environment with a private data dir.
func cliEnv(t *testing.T, extra ...string) map[string]string {
	t.Helper()
	env := map[string]string{"ECTO_DATA_DIR": t.TempDir(), "HOME": t.TempDir()}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// runCLI runs the ironvise command line in-process.
func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"ironvise"}, args...), strings.NewReader(stdin), &out, &errb, config.MapLookup(env))
	return code, out.String(), errb.String()
}

func TestCheckCommand(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cliEnv(t)
	cases := []struct {
		name, stdin string
		code        int
		check, vc   string
	}{
		{"allow", `{"action":"run_command","params":{"command":"ls -la"},"justification":"list files"}`, 0, "guard", "guard_not_configured"},
		{"tripwire deny", `{"action":"run_command","params":{"command":"sudo ls"},"justification":"list files"}`, 1, "tripwire", "cmd_banned_program"},
		{"schema deny", `{"action":"delete_file"}`, 1, "schema", "schema_unknown_action"},
		// check runs nothing, so it checks an agent's write like any intent.
		{"write_file outside the workspace", `{"action":"write_file","params":{"path":"/etc/cron.d/x"},"justification":"add a cron job"}`, 1, "tripwire", "path_outside_roots"},
		{"path escape", `{"action":"read_file","params":{"path":"../../etc/passwd"},"justification":"read it"}`, 1, "tripwire", "path_traversal"},
		{"malformed JSON", `{"action":`, 1, "schema", "schema_not_json"},
		{"invalid UTF-8", "{\"action\":\"complete\",\"reasoning\":\"\xff\"}", 1, "schema", "schema_invalid_string"},
		{"over 64 KiB", `{"action":"complete","reasoning":"` + strings.Repeat("a", 70000) + `"}`, 1, "schema", "schema_too_large"},
		{"over 1 MiB", strings.Repeat(" ", 2<<20), 1, "schema", "schema_too_large"},
		{"deeply nested", `{"action":"complete","x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`, 1, "schema", "schema_not_json"},
		{"empty stdin", ``, 1, "schema", "schema_not_json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, env, tc.stdin, "check", "--workspace", ws)
			if code != tc.code {
				t.Fatalf("exit %d; want %d (stderr %s)", code, tc.code, errOut)
			}
			var v struct {
				Decision, Check, Code, Message string
				Verdicts                       []map[string]any
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("stdout is not verdict JSON: %v\n%s", err, out)
			}
			if v.Check != tc.check || v.Code != tc.vc || v.Message == "" || len(v.Verdicts) == 0 {
				t.Fatalf("got %+v; want %s %s", v, tc.check, tc.vc)
			}
			if (code == 0) != (v.Decision == "allow") {
				t.Fatalf("decision %s with exit %d", v.Decision, code)
			}
		})
	}
}

func TestCheckCommandConfigErrors(t *testing.T) {
	ws := t.TempDir()
	env := cliEnv(t)
	if err := os.WriteFile(filepath.Join(env["ECTO_DATA_DIR"], "tripwire.json"), []byte(`{"version":2,"nope":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, env, `{"action":"complete"}`, "check", "--workspace", ws)
	if code != 2 || !strings.Contains(errOut, "$.version: must be 1") || !strings.Contains(errOut, "$.nope: unknown key") {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, cliEnv(t, "SCANNER_SENSITIVITY", "extreme"), `{"action":"complete"}`, "check", "--workspace", ws)
	if code != 2 || !strings.Contains(errOut, `SCANNER_SENSITIVITY="extreme": unknown value (accepted: low, medium, high)`) {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, cliEnv(t), `{}`, "check", "--workspace", "/nonexistent-ironvise")
	if code != 2 || !strings.Contains(errOut, "workspace") {
		t.Fatalf("exit %d stderr %q", code, errOut)
	}
	code, _, _ = runCLI(t, cliEnv(t), ``, "check", "--bogus")
	if code != 2 {
		t.Fatalf("unknown flag: exit %d; want 2", code)
	}
}

func TestCheckCommandPolicy(t *testing.T) {
	ws := t.TempDir()
	env := cliEnv(t)
	nmap := `{"action":"run_command","params":{"command":"nmap -sV 10.0.0.1"},"justification":"scan the host"}`
	code, out, errOut := runCLI(t, env, nmap, "check", "--workspace", ws, "--policy", "soc2-audit")
	if code != 1 || !strings.Contains(out, `"code": "approval_timeout"`) || !strings.Contains(out, `"policy_hash": "`) {
		t.Fatalf("soc2 nmap: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, env, nmap, "check", "--workspace", ws, "--policy", "soc2-audit", "--policy-sha256", strings.Repeat("0", 64))
	if code != 2 || !strings.Contains(errOut, "policy not loaded") {
		t.Fatalf("pin mismatch: exit %d %s", code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("name = \"x\"\n\ngoal = \"x\"\n"), 0o600)
	code, _, errOut = runCLI(t, env, nmap, "check", "--workspace", ws, "--policy", bad)
	if code != 2 || !strings.Contains(errOut, "bad.toml:3: goal: unknown key") {
		t.Fatalf("bad policy: exit %d %s", code, errOut)
	}
	code, _, errOut = runCLI(t, env, nmap, "check", "--workspace", ws, "--policy-sha256", "ab")
	if code != 2 || !strings.Contains(errOut, "--policy-sha256 needs --policy") {
		t.Fatalf("pin without policy: exit %d %s", code, errOut)
	}
}

func TestCheckCommandUsesConfiguredGuard(t *testing.T) {
	ws := t.TempDir()
	in := `{"action":"run_command","params":{"command":"ls -la"},"justification":"list files"}`
	env := cliEnv(t, "LLM_BACKEND", "mock", "GUARD_LLM_BACKEND", "mock", "GUARD_LLM_MODEL", "mock-v1", "GUARD_MOCK_REPLY", "DENY: not needed")
	code, out, errOut := runCLI(t, env, in, "check", "--workspace", ws)
	if code != 1 || !strings.Contains(out, `"code": "guard_deny"`) || !strings.Contains(out, "not needed") {
		t.Fatalf("configured guard: exit %d\n%s\n%s", code, out, errOut)
	}
}
