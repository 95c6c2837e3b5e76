package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/policy"
)

func TestPolicyList(t *testing.T) {
	packs := policy.Packs()
	t.Run("packs are listed without a policies folder", func(t *testing.T) {
		env := cliEnv(t)
		code, out, errOut := runCLI(t, env, "", "policy", "list")
		if code != ExitOK {
			t.Fatalf("exit %d; want 0 (stderr %s)", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 1+len(packs) || !strings.HasPrefix(lines[0], "NAME") {
			t.Fatalf("output:\n%s", out)
		}
		for i, n := range packs {
			b, _ := policy.PackBytes(n)
			f := strings.Fields(lines[i+1])
			if f[0] != n || f[1] != "embedded" || f[2] != policy.Hash(b) {
				t.Errorf("line %q; want %s embedded %s", lines[i+1], n, policy.Hash(b))
			}
		}
		if !strings.Contains(out, "SOC 2 Compliance Audit") {
			t.Errorf("titles missing:\n%s", out)
		}
	})
	t.Run("data dir policies, valid and invalid, as JSON", func(t *testing.T) {
		env := cliEnv(t)
		dir := filepath.Join(env["ECTO_DATA_DIR"], "policies")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		team := []byte("name = \"Team audit\"\nmax_steps = 12\n")
		for name, body := range map[string][]byte{"team.toml": team, "broken.toml": []byte("name = \"B\"\ngoal = 1\n")} {
			if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := runCLI(t, env, "", "policy", "list", "--json")
		if code != ExitOK {
			t.Fatalf("exit %d (stderr %s)", code, errOut)
		}
		var got []policyEntry
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if len(got) != len(packs)+2 {
			t.Fatalf("%d entries; want %d:\n%s", len(got), len(packs)+2, out)
		}
		broken, teamEntry := got[len(packs)], got[len(packs)+1]
		if broken.Name != "broken" || broken.Valid || !strings.Contains(broken.Error, "broken.toml:2: goal: unknown key") {
			t.Errorf("broken entry %+v", broken)
		}
		if teamEntry.Name != "team" || !teamEntry.Valid || teamEntry.Title != "Team audit" ||
			teamEntry.Source != filepath.Join(dir, "team.toml") || teamEntry.SHA256 != policy.Hash(team) {
			t.Errorf("team entry %+v", teamEntry)
		}
		// The text form marks the invalid policy and explains it on stderr.
		code, out, errOut = runCLI(t, env, "", "policy", "list")
		if code != ExitOK || !strings.Contains(out, "invalid (see stderr)") || !strings.Contains(errOut, "goal: unknown key") {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
	t.Run("help has an example", func(t *testing.T) {
		code, out, _ := runCLI(t, cliEnv(t), "", "policy", "list", "--help")
		if code != ExitOK || !strings.Contains(out, "Examples:") || !strings.Contains(out, "ironvise policy list --json") {
			t.Errorf("exit %d, help:\n%s", code, out)
		}
	})
	t.Run("extra argument is a usage error", func(t *testing.T) {
		if code, _, _ := runCLI(t, cliEnv(t), "", "policy", "list", "soc2"); code != ExitUsage {
			t.Errorf("exit %d; want %d", code, ExitUsage)
		}
	})
}

// TestPolicyFlagLookup: --policy takes a name, a relative or absolute path
// (with or without .toml); a name that also names a working-directory file
// is refused; a value that names nothing lists where it was looked for.
func TestPolicyFlagLookup(t *testing.T) {
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	t.Chdir(cwd)
	ws := t.TempDir()
	env := cliEnv(t)
	team := []byte("name = \"Team\"\n\n[[command_rules]]\nprogram = \"nmap\"\ndecision = \"deny\"\nreason = \"team: no scans\"\n")
	os.MkdirAll("conf", 0o755)
	for _, f := range []string{"team.toml", "conf/team.toml", "soc2-audit.toml"} {
		if err := os.WriteFile(f, team, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nmap := `{"action":"run_command","params":{"command":"nmap -sV 10.0.0.1"},"justification":"scan the host"}`
	for _, ref := range []string{"team", "team.toml", "./team", "conf/team", filepath.Join(cwd, "conf", "team.toml"), filepath.Join(cwd, "team")} {
		code, out, errOut := runCLI(t, env, nmap, "check", "--workspace", ws, "--policy", ref)
		if code != ExitDenied || !strings.Contains(out, "team: no scans") || !strings.Contains(out, `"policy_hash": "`+policy.Hash(team)) {
			t.Errorf("--policy %s: exit %d\n%s\n%s", ref, code, out, errOut)
		}
	}
	code, _, errOut := runCLI(t, env, nmap, "check", "--workspace", ws, "--policy", "soc2-audit")
	if code != ExitUsage || !strings.Contains(errOut, "ambiguous") || !strings.Contains(errOut, "./soc2-audit.toml") {
		t.Errorf("name shared by a pack and a file: exit %d\n%s", code, errOut)
	}
	code, _, errOut = runCLI(t, env, nmap, "check", "--workspace", ws, "--policy", "missing")
	want := []string{"policy \"missing\" not found; looked in, in order:", "1. the shipped packs", "2. " + filepath.Join(env["ECTO_DATA_DIR"], "policies", "missing.toml"),
		"3. ./missing (working directory)", "4. ./missing.toml (working directory)", "fix: pass the policy file's path"}
	last := -1
	for _, w := range want {
		i := strings.Index(errOut, w)
		if code != ExitUsage || i <= last {
			t.Fatalf("missing policy: exit %d; stderr lacks %q in order:\n%s", code, w, errOut)
		}
		last = i
	}
}
