//go:build linux

package native

import (
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/timerslack"
)

// TestCommandGetsTheCommandsTimerSlack: in a process run again with a
// coarse timer slack (timerslack.Reexec names the slack it had in
// timerslack.Var), every command gets that slack back, in argv mode and
// under the shell, in the namespaces and in container mode (through the
// reaper); the launchers keep the coarse one until then. That the coarse
// slack reaches the launchers, and not the commands, through a real serve
// is internal/cli's TestServeRunsWithCoarseTimerSlack.
func TestCommandGetsTheCommandsTimerSlack(t *testing.T) {
	t.Setenv(timerslack.Var, "70001")
	fx := newFixture(t)
	for _, mode := range []struct {
		name string
		opts sandbox.Options
	}{{"namespaces", sandbox.Options{}}, {"container mode", sandbox.Options{ContainerMode: true}}} {
		t.Run(mode.name, func(t *testing.T) {
			tier := newTestTier(t, mode.opts)
			for _, cmd := range []string{"cat /proc/self/timerslack_ns", "cat /proc/self/timerslack_ns | cat"} {
				r := run(t, tier, fx, cmd)
				exitZero(t, r)
				if got := strings.TrimSpace(r.Stdout); got != "70001" {
					t.Fatalf("%q: the command's timer slack is %q, want 70001", cmd, got)
				}
			}
		})
	}
}

// TestMalformedTimerSlackRefusesTheTier: a timerslack.Var that Reexec did
// not write is refused, with the fix, rather than ignored.
func TestMalformedTimerSlackRefusesTheTier(t *testing.T) {
	for _, bad := range []string{"0", "fast", "-1"} {
		t.Setenv(timerslack.Var, bad)
		if tier, err := New(sandbox.Options{}); err == nil {
			tier.(*Tier).Close()
			t.Fatalf("%s=%q: the tier was built", timerslack.Var, bad)
		} else if !strings.Contains(err.Error(), "fix: unset "+timerslack.Var) {
			t.Fatalf("%s=%q: %v, want the fix", timerslack.Var, bad, err)
		}
	}
}
