package cli

import (
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/policy"
)

// TestLimitsFor covers the step-limit rule of
// docs/design/checks.md#check-order: the smaller of the policy's max_steps
// and the operator's limit when both are set, whichever is set otherwise, and
// 20 when neither is.
func TestLimitsFor(t *testing.T) {
	pol, err := policy.Parse("p.toml", []byte("name = \"p\"\nmax_steps = 7\n"), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := config.Agent{MaxSteps: 12, MaxStepsSet: true}
	unset := config.Agent{MaxSteps: config.DefaultMaxSteps}
	cases := []struct {
		name     string
		ac       config.Agent
		pol      *policy.Policy
		flag     int
		flagSet  bool
		expected int
	}{
		{"neither", unset, nil, 0, false, 20},
		{"env only", env, nil, 0, false, 12},
		{"flag beats env", env, nil, 3, true, 3},
		{"policy only", unset, pol, 0, false, 7},
		{"env and policy: min", env, pol, 0, false, 7},
		{"flag below policy", env, pol, 5, true, 5},
		{"flag above policy", env, pol, 50, true, 7},
	}
	for _, tc := range cases {
		if got := limitsFor(tc.ac, tc.pol, tc.flag, tc.flagSet).MaxSteps; got != tc.expected {
			t.Errorf("%s: %d; want %d", tc.name, got, tc.expected)
		}
	}
}
