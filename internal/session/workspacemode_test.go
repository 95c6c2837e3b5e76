package session

import (
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/policy"
)

// TestWorkspaceModeComposition: the configuration is the ceiling, the
// policy and then the session narrow it, and asking for more than the
// ceiling or the policy allow is an error naming which to change.
func TestWorkspaceModeComposition(t *testing.T) {
	pol := func(mode string) *policy.Policy {
		t.Helper()
		src := "name = \"p\"\n"
		if mode != "" {
			src += "[workspace]\nmode = \"" + mode + "\"\n"
		}
		p, err := policy.Parse("p.toml", []byte(src), policy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		config, policy, asked string
		want                  bool
		err                   string
	}{
		{config: "overlay", want: true},
		{config: "overlay", asked: "overlay", want: true},
		{config: "overlay", asked: "ro", want: false},
		{config: "overlay", policy: "overlay", asked: "ro", want: false},
		{config: "overlay", policy: "ro", want: false},
		{config: "overlay", policy: "ro", asked: "ro", want: false},
		{config: "overlay", policy: "ro", asked: "overlay", err: `keeps it read-only ([workspace] mode = "ro")`},
		{config: "ro", want: false},
		{config: "ro", asked: "ro", want: false},
		{config: "ro", asked: "overlay", err: `ECTO_SANDBOX_WORKSPACE is "ro": set ECTO_SANDBOX_WORKSPACE=overlay, or ask for ro`},
		{config: "", asked: "overlay", err: `ECTO_SANDBOX_WORKSPACE is "ro"`},
		{config: "ro", policy: "overlay", asked: "ro", err: `asks for mode = "overlay"`},
		{config: "overlay", asked: "rw", err: `workspace mode "rw": want "ro" or "overlay"`},
		{config: "overlay", asked: "RO", err: `want "ro" or "overlay"`},
	} {
		name := tc.config + "/" + tc.policy + "/" + tc.asked
		on, _, err := WorkspaceMode(tc.config, pol(tc.policy), tc.asked)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v; want one containing %q", name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case on != tc.want:
			t.Errorf("%s: overlay %v; want %v", name, on, tc.want)
		}
	}
}
