//go:build linux

package container

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/timerslack"
)

// TestCommandGetsTheCommandsTimerSlack: in a serve that ran itself again
// with a coarse timer slack (package timerslack), the container runtime is
// started with the slack serve was started with, and the command in the
// container has it, not serve's coarse one, which it would inherit
// through the runtime otherwise.
func TestCommandGetsTheCommandsTimerSlack(t *testing.T) {
	tier := newPodman(t)
	ws := workspace(t)
	// This goroutine's thread stands for one of serve's: coarse.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := timerslack.Get()
	if err != nil {
		t.Fatal(err)
	}
	if err := timerslack.Set(timerslack.Coarse); err != nil {
		t.Fatal(err)
	}
	defer timerslack.Set(own)
	t.Setenv(timerslack.Var, "70001")

	r := tier.Run(context.Background(), sandbox.Request{Command: "cat /proc/self/timerslack_ns", Workspace: ws, Timeout: 60 * time.Second})
	if r.Status != sandbox.StatusOK || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("status %s, exit %v: %s %s", r.Status, r.ExitCode, r.Reason, r.Stderr)
	}
	if got := strings.TrimSpace(r.Stdout); got != "70001" {
		t.Fatalf("the command's timer slack is %q, want 70001", got)
	}
}
