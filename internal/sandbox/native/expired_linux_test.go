package native

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestTimeoutBeforeSandboxApplied: a run whose timeout expires before the
// launcher has applied the sandbox is aborted with a reason that names
// the timeout and its fix, not as a launcher that died of a signal (what
// the kill for the timeout looks like on its own).
func TestTimeoutBeforeSandboxApplied(t *testing.T) {
	requireSandbox(t)
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	r := tier.Run(context.Background(), sandbox.Request{Command: "echo RAN", Workspace: fx.ws, Timeout: time.Nanosecond})
	if r.Status != sandbox.StatusAborted {
		t.Fatalf("status %s (%s); want aborted", r.Status, r.Reason)
	}
	if !strings.Contains(r.Reason, "timeout of 1ns expired before the launcher applied the sandbox") ||
		!strings.Contains(r.Reason, "ECTO_SANDBOX_TIMEOUT_SECS") {
		t.Fatalf("reason %q; want the expired timeout and its fix", r.Reason)
	}
	if strings.Contains(r.Stdout, "RAN") {
		t.Fatalf("the command ran: %q", r.Stdout)
	}
}
