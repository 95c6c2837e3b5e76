package cli

import (
	"reflect"
	"testing"

	"github.com/ironvise/ironvise/internal/evidence"
)

// TestDiffAuditCountsExecutedActionsOnly: diff-audit compares the actions
// that ran by the report's one definition; a command the sandbox aborted
// and a read stopped at execution did not run (they once showed up as
// actions added or removed).
func TestDiffAuditCountsExecutedActionsOnly(t *testing.T) {
	r := &evidence.Report{Actions: []evidence.Action{
		{Action: "run_command", Target: "make test", Executed: true},
		{Action: "run_command", Target: "rm -rf build", Executed: false, Run: evidence.Run{Status: "aborted"}},
		{Action: "read_file", Target: "README.md", Executed: true},
		{Action: "read_file", Target: "/etc/shadow", Verdict: "denied at execution"},
	}}
	want := map[string]bool{"run_command make test": true, "read_file README.md": true}
	if got := executedActions(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("executed actions %v; want %v", got, want)
	}
}
