package sandbox

import "testing"

// TestJudgeCredentialsBoundingSet: a command with every capability set
// empty but the bounding set, and no_new_privs, has dropped its
// capabilities only in container mode (where a non-root IronVise cannot
// empty the bounding set and no capability can be gained); anywhere else,
// or with any other set non-empty, or without no_new_privs, it has not.
func TestJudgeCredentialsBoundingSet(t *testing.T) {
	status := func(eff, bnd, nnp string) findings {
		return parseFindings("@@status:CapInh:0000000000000000\n@@status:CapPrm:0000000000000000\n" +
			"@@status:CapEff:" + eff + "\n@@status:CapBnd:" + bnd + "\n@@status:CapAmb:0000000000000000\n@@status:NoNewPrivs:" + nnp + "\n")
	}
	const zero, some = "0000000000000000", "00000000800405fb"
	for _, tc := range []struct {
		name      string
		f         findings
		container bool
		want      State
	}{
		{"all empty", status(zero, zero, "1"), false, StateEnforced},
		{"all empty, container", status(zero, zero, "1"), true, StateEnforced},
		{"bounding set, namespaces", status(zero, some, "1"), false, StateNotEnforced},
		{"bounding set, container", status(zero, some, "1"), true, StateEnforced},
		{"bounding set, container, no no_new_privs", status(zero, some, "0"), true, StateNotEnforced},
		{"effective set, container", status(some, some, "1"), true, StateNotEnforced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v verdicts
			judgeCredentials(&v, tc.f, tc.container)
			for _, g := range v {
				if g.Name == GCapsDropped && g.State != tc.want {
					t.Fatalf("caps_dropped %s (%s); want %s", g.State, g.Evidence, tc.want)
				}
			}
		})
	}
}
