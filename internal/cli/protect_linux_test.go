//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/secretpaths"
)

// homeWorkspace is a home-like directory used as both $HOME and the
// workspace, holding IronVise's data directory and an SSH key: the state
// of `cd ~ && ironvise exec …`.
func homeWorkspace(t *testing.T, extra ...string) (ws string, env map[string]string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		".ssh/id_ed25519":         "-----BEGIN OPENSSH PRIVATE KEY----- home key",
		".aws/credentials":        "aws_secret_access_key = abc",
		".config/myapp/token":     "app token",
		"notes.txt":               "ordinary notes",
		".local/share/.keep-dirs": "",
	}
	for p, body := range files {
		p = filepath.Join(ws, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env = map[string]string{
		"HOME": ws, "ECTO_DATA_DIR": filepath.Join(ws, ".local", "share", "ironvise"),
		// The checks are what this test exercises; the sandbox's own
		// masking is tested with the native tier.
		"ECTO_SANDBOX_PERMISSIVE": "true",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return ws, env
}

// TestExecRefusesSecretsOfAHomeWorkspace is the reported escape: run from
// a home directory, exec could print the issuer key and the SSH key. The
// workspace itself is accepted (the sandbox hides what is inside); every
// way of naming the secrets is refused by the tripwire, recorded, and
// nothing is printed.
func TestExecRefusesSecretsOfAHomeWorkspace(t *testing.T) {
	ws, env := homeWorkspace(t)
	// The first run creates the ledger and the issuer key in the data dir.
	code, out, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "cat notes.txt")
	if code != 0 || out != "ordinary notes" {
		t.Fatalf("a home workspace must be usable: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	issuer := filepath.Join(env["ECTO_DATA_DIR"], "keys", "issuer.ed25519")
	if _, err := os.Stat(issuer); err != nil {
		t.Fatalf("the issuer key was not created where the test expects it: %v", err)
	}
	for _, cmd := range []string{
		"cat .local/share/ironvise/keys/issuer.ed25519",
		"cat .ssh/id_ed25519",
		"cat ~/.ssh/id_ed25519",
		"cat $HOME/.aws/credentials",
		"cat < .ssh/id_ed25519",
		"tar cf - .local/share/ironvise",
		"cp .local/share/ironvise/ledger.db $TMPDIR/l.db",
		"cd .local/share && cat ironvise/keys/issuer.ed25519",
	} {
		code, out, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", cmd)
		if code != ExitExecDenied || !strings.Contains(errOut, "denied by tripwire: path_protected") {
			t.Errorf("%s: exit %d, stderr %s; want 126 and a path_protected denial", cmd, code, errOut)
		}
		if strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, "aws_secret") {
			t.Errorf("%s printed a secret: %q", cmd, out)
		}
		// The denial is recorded like any other.
		if got := types(events(t, env, sessionOf(t, errOut))); !strings.Contains(got, "check_verdict session_sealed") {
			t.Errorf("%s: events %s", cmd, got)
		}
	}
	// The default workspace is the working directory: the same refusal.
	t.Chdir(ws)
	if code, _, errOut := runCLI(t, env, "", "exec", "--", "cat .ssh/id_ed25519"); code != ExitExecDenied || !strings.Contains(errOut, "path_protected") {
		t.Errorf("default workspace: exit %d %s", code, errOut)
	}
}

// TestCheckRefusesProtectedAndUserEntries: the check command gives the
// same verdict, including for an entry the operator added in tripwire.json.
func TestCheckRefusesProtectedAndUserEntries(t *testing.T) {
	ws, env := homeWorkspace(t)
	if err := os.MkdirAll(env["ECTO_DATA_DIR"], 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env["ECTO_DATA_DIR"], "tripwire.json"), []byte(`{"protected_paths": ["~/.config/myapp"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	checkCodes(t, env, ws, []checkCase{
		{`{"action":"read_file","params":{"path":".ssh/id_ed25519"},"justification":"read the key"}`, ExitDenied},
		{`{"action":"read_file","params":{"path":".config/myapp/token"},"justification":"read the token"}`, ExitDenied},
		{`{"action":"run_command","params":{"command":"cat .config/myapp/token"},"justification":"read the token"}`, ExitDenied},
		{`{"action":"read_file","params":{"path":"notes.txt"},"justification":"read the notes"}`, ExitOK},
	})
	// A broken entry is a configuration error naming the entry.
	if err := os.WriteFile(filepath.Join(env["ECTO_DATA_DIR"], "tripwire.json"), []byte(`{"protected_paths": ["~/ok", "relative"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, env, `{"action":"complete"}`, "check", "--workspace", ws)
	if code != ExitUsage || !strings.Contains(errOut, `$.protected_paths[1]: "relative"`) {
		t.Errorf("invalid entry: exit %d %s", code, errOut)
	}
}

// checkCase is one intent for `ironvise check` and its exit code.
type checkCase struct {
	intent string
	code   int
}

// checkCodes runs `ironvise check --workspace ws` on each case's intent
// and wants its exit code, and a path_protected verdict for a denial.
func checkCodes(t *testing.T, env map[string]string, ws string, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		code, out, errOut := runCLI(t, env, tc.intent, "check", "--workspace", ws)
		if code != tc.code {
			t.Errorf("%s: exit %d; want %d (%s %s)", tc.intent, code, tc.code, out, errOut)
		}
		if tc.code == ExitDenied && !strings.Contains(out, `"code": "path_protected"`) {
			t.Errorf("%s: verdict %s; want path_protected", tc.intent, out)
		}
	}
}

// TestWorkspaceRefusals: every front end that takes a workspace refuses
// the file-system root, each system directory (also by its symlinked
// name), the data directory and a credential store, with what failed,
// why and the fix.
func TestWorkspaceRefusals(t *testing.T) {
	ws, env := homeWorkspace(t, "LLM_BACKEND", "mock", "GUARD_REQUIRED", "false", "ECTO_BIND_PORT", "0")
	if err := os.MkdirAll(filepath.Join(env["ECTO_DATA_DIR"], "policies"), 0o700); err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, r := range secretpaths.SystemRoots("linux") {
		if _, err := os.Stat(r); err == nil {
			refused = append(refused, r) // a root that does not exist fails earlier, as any missing directory
		}
	}
	if !slices.Contains(refused, "/") || !slices.Contains(refused, "/etc") {
		t.Fatalf("system roots on this host: %v", refused)
	}
	refused = append(refused, env["ECTO_DATA_DIR"], filepath.Join(env["ECTO_DATA_DIR"], "policies"), filepath.Join(ws, ".ssh"))
	for _, dir := range refused {
		for _, args := range [][]string{
			{"exec", "--workspace", dir, "--", "true"},
			{"check", "--workspace", dir},
			{"audit", "look around", "--workspace", dir},
			{"serve", "--workspace", dir},
		} {
			code, _, errOut := runCLI(t, env, `{"action":"complete"}`, args...)
			if code != ExitUsage || !strings.Contains(errOut, "workspace ") || !strings.Contains(errOut, "refused: ") || !strings.Contains(errOut, "fix: ") {
				t.Errorf("%s: exit %d, stderr %q; want exit 2 saying what was refused, why and the fix", strings.Join(args, " "), code, errOut)
			}
		}
	}
	// From /, the default workspace is refused too.
	t.Chdir("/")
	if code, _, errOut := runCLI(t, env, "", "exec", "--", "true"); code != ExitUsage || !strings.Contains(errOut, "root of the file system") {
		t.Errorf("default workspace /: exit %d %s", code, errOut)
	}
}

// TestProtectionSources: the list handed to the tripwire and the tier
// holds the data directory, IronVise's files outside it and the stores
// that variables moved, besides the home's deny list.
func TestProtectionSources(t *testing.T) {
	ws, env := homeWorkspace(t)
	elsewhere := t.TempDir()
	env["DATABASE_URL"] = "sqlite://" + filepath.Join(elsewhere, "ledger.db")
	env["MOCK_LLM_SCRIPT"] = filepath.Join(elsewhere, "script.jsonl")
	env["KUBECONFIG"] = filepath.Join(elsewhere, "a.conf") + ":" + filepath.Join(elsewhere, "b.conf")
	env["DOCKER_CONFIG"] = filepath.Join(elsewhere, "docker")
	env["XDG_CONFIG_HOME"] = filepath.Join(elsewhere, "xdg")
	a := &app{lookup: config.MapLookup(env)}
	cfg, err := a.config()
	if err != nil {
		t.Fatal(err)
	}
	list, err := a.protection(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		env["ECTO_DATA_DIR"],
		filepath.Join(elsewhere, "ledger.db"), filepath.Join(elsewhere, "ledger.db-wal"), filepath.Join(elsewhere, "ledger.db-shm"),
		filepath.Join(elsewhere, "script.jsonl"), filepath.Join(elsewhere, "a.conf"), filepath.Join(elsewhere, "b.conf"),
		filepath.Join(elsewhere, "docker", "config.json"), filepath.Join(elsewhere, "xdg", "gcloud"),
		filepath.Join(ws, ".ssh"), filepath.Join(ws, ".aws"), "/root/.ssh",
	} {
		if !slices.Contains(list.Paths, want) {
			t.Errorf("%s is not in the list", want)
		}
	}
	// Computed once: the tier asks for it later and gets the same list.
	again, err := a.tierProtection(cfg)
	if err != nil || !slices.Equal(again.Paths, list.Paths) {
		t.Errorf("the tier's list differs from the tripwire's (%v)", err)
	}
}
