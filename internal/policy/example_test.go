package policy_test

import (
	"fmt"

	"github.com/ironvise/ironvise/internal/policy"
)

// A policy with problems does not load; every problem is reported with its
// line and key path.
func ExampleParse() {
	src := `name = "web-audit"
max_steps = 0
command_rules = [
  { id = "scan", program = "nmap", decision = "require_approval", gate = "net-scan" },
]
goal = "audit"
`
	_, err := policy.Parse("web-audit.toml", []byte(src), policy.Options{GOOS: "linux"})
	fmt.Println(err)
	// Output:
	// web-audit.toml:2: max_steps: must be from 1 to 1000 (got 0)
	// web-audit.toml:4: command_rules[0].gate: no approval gate has id "net-scan"
	// web-audit.toml:6: goal: unknown key
}
