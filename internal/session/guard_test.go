package session

import (
	"context"
	"errors"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestSkippedGuard is a guard that does not run: the checks must see no
// guard at all (a nil *guard.Host inside an interface would look enabled
// and crash the first step).
func TestSkippedGuard(t *testing.T) {
	g, err := StartGuard(context.Background(), guard.Plan{SkipMessage: guard.SkipNotRequired}, GuardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Enabled() || g.Check() != nil || g.Status() != nil || g.Skip != guard.SkipNotRequired {
		t.Fatalf("skipped guard %+v: enabled %v, check %v, status %v; want off with the plan's reason", g, g.Enabled(), g.Check(), g.Status())
	}
	g.Close()
	g.Close()
}

// TestStartGuardError reports a worker that cannot start as a StartError
// carrying the cause, and starts nothing.
func TestStartGuardError(t *testing.T) {
	plan := guard.Plan{Enabled: true, Guard: config.Guard{Required: true, Backend: "no-such-backend", Model: "m", TimeoutSecs: 30}}
	_, err := StartGuard(context.Background(), plan, GuardOptions{})
	var se *StartError
	if !errors.As(err, &se) || se.Err == nil {
		t.Fatalf("StartGuard with an unknown backend: %v; want a *StartError", err)
	}
	if !errors.Is(err, llm.ErrUnknownBackend) {
		t.Fatalf("StartGuard with an unknown backend: %v; want it to wrap llm.ErrUnknownBackend", err)
	}
}

// TestPermissiveReport reports every guarantee not enforced: the
// permissive mode confines nothing, and the report must not suggest
// otherwise.
func TestPermissiveReport(t *testing.T) {
	r := PermissiveReport()
	if r.Tier != sandbox.TierNone || !r.Selected || len(r.Guarantees) != len(sandbox.GuaranteeNames()) {
		t.Fatalf("report %+v; want the none tier, selected, one entry per guarantee", r)
	}
	for _, g := range r.Guarantees {
		if g.State != sandbox.StateNotEnforced {
			t.Errorf("guarantee %s is %s; want %s", g.Name, g.State, sandbox.StateNotEnforced)
		}
	}
}
