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
