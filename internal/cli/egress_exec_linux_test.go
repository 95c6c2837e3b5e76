//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestExecNetworkFromPolicy: exec composes ECTO_SANDBOX_NETWORK with the
// policy's [network] section. A policy that narrows the list runs, and the
// session's genesis records the effective list; one that widens it is
// refused before anything is recorded, naming the entry.
func TestExecNetworkFromPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	narrow := write("narrow.toml", "name = \"narrow\"\n[network]\nallowed_domains = [\"files.pythonhosted.org\"]\n")
	widen := write("widen.toml", "name = \"widen\"\n[network]\nallowed_domains = [\"pypi.org\", \"evil.test\"]\n")
	env := cliEnv(t, "ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_ALLOWED_DOMAINS", "pypi.org,*.pythonhosted.org")
	ws := t.TempDir()

	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--policy", widen, "--", "echo hi")
	if code != 2 || !strings.Contains(errOut, `allowed_domains entry "evil.test" is not allowed by the configured list (pypi.org,*.pythonhosted.org)`) {
		t.Fatalf("widening policy: exit %d\n%s", code, errOut)
	}
	if code, out, _ := runCLI(t, env, "", "sessions", "--json"); code != 0 || strings.Contains(out, "echo hi") {
		t.Fatalf("a session was recorded for the refused exec: %s", out)
	}

	code, _, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--policy", narrow, "--", "echo hi")
	if code != 0 {
		t.Fatalf("narrowing policy: exit %d\n%s", code, errOut)
	}
	id := sessionOf(t, errOut)
	l := openTestLedger(t, env)
	t.Cleanup(func() { l.Close(context.Background()) })
	evs, err := l.Events(context.Background(), uuid.MustParse(id), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Network struct {
			Mode             string   `json:"mode"`
			AllowedDomains   []string `json:"allowed_domains"`
			NarrowedByPolicy bool     `json:"narrowed_by_policy"`
		} `json:"network"`
	}
	if err := json.Unmarshal(evs[0].Payload, &g); err != nil || g.Network.Mode != "proxy" ||
		strings.Join(g.Network.AllowedDomains, ",") != "files.pythonhosted.org" || !g.Network.NarrowedByPolicy {
		t.Fatalf("genesis %s; want the narrowed proxy list", evs[0].Payload)
	}
}
