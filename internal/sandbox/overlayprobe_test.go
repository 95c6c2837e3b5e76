// The prober's fixtures include a UDP socket, which Wine (the Windows
// test runner here) refuses (wsaioctl error 10045); the Windows tier's own
// answer to overlay mode is tested in internal/sandbox/native.

//go:build !windows

package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// overlayTier answers every Run with a fixed result, recording whether the
// request was in overlay mode. An interface fake: the real overlay runs
// are the native Linux tier's (its tests run this probe through Doctor).
type overlayTier struct {
	fakeTier
	result   Result
	overlaid bool
}

func (o *overlayTier) Run(_ context.Context, req Request) Result {
	o.overlaid = req.Overlay != nil
	return o.result
}

// TestOverlayProbeStates: fs_overlay_isolated is not applicable on a tier
// that refuses overlay-mode runs, and not enforced on one that runs them
// on the real workspace (ignoring Request.Overlay) or leaves its layer
// without the changes.
func TestOverlayProbeStates(t *testing.T) {
	cases := []struct {
		name   string
		result Result
		want   State
		ev     string
	}{
		{"refused", Aborted(TierNativeDarwin, "overlay mode is not supported on this tier yet", time.Millisecond), StateNotApplicable, "refused (fails closed)"},
		{"ignored", Result{Status: StatusOK, Stdout: "@@done:yes\n", Enforced: &Enforced{}}, StateNotEnforced, `workspace "" instead of overlay`},
		{"no writes", Result{Status: StatusOK, Stdout: "mkdir: Read-only file system\n", Enforced: &Enforced{Workspace: "overlay", Overlay: &OverlayMount{}}}, StateNotEnforced, "could not write"},
		{"empty layer", Result{Status: StatusOK, Stdout: "@@done:yes\n", Enforced: &Enforced{Workspace: "overlay", Overlay: &OverlayMount{}}}, StateNotEnforced, "layer lacks the new file, the changed file, the deletion's whiteout, the renamed directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tier := &overlayTier{result: tc.result}
			p, err := newProber(tier)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			g := p.overlayProbe(context.Background(), nil)
			if !tier.overlaid || g.Name != GFSOverlayIsolated || g.State != tc.want || !strings.Contains(g.Evidence, tc.ev) {
				t.Fatalf("overlay mode %v, guarantee %+v", tier.overlaid, g)
			}
		})
	}
}
