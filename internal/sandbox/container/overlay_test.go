package container

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
)

func TestOverlayRefusal(t *testing.T) {
	for _, tc := range []struct {
		rt, goos string
		euid     int
		remote   bool
		want     string
	}{
		{"docker", "linux", 0, false, "Docker daemon"},
		{"podman", "darwin", 0, false, "needs Linux"},
		{"podman", "linux", 0, true, "remote"},
		{"podman", "linux", 1000, false, "rootless"},
	} {
		reason, fix := overlayRefusal(tc.rt, tc.goos, tc.euid, tc.remote)
		if !strings.Contains(reason, tc.want) || !strings.Contains(fix, "ECTO_SANDBOX_WORKSPACE=readonly") {
			t.Fatalf("%+v: got %q, fix %q; want a reason with %q and a fix", tc, reason, fix, tc.want)
		}
	}
	if reason, fix := overlayRefusal("podman", "linux", 0, false); reason != "" || fix != "" {
		t.Fatalf("local rootful Podman refused: %q %q", reason, fix)
	}
}

// TestOverlayModeAbortsWhereItCannotApply: with Docker or a remote Podman
// an overlay-mode run aborts before any container exists (the client named
// is not even there); it never runs on the real workspace instead.
func TestOverlayModeAbortsWhereItCannotApply(t *testing.T) {
	for _, tc := range []struct {
		rt     string
		remote bool
		want   string
	}{
		{"docker", false, "Docker daemon"},
		{"podman", true, "remote"},
	} {
		t.Run(tc.rt, func(t *testing.T) {
			c := passedPreflight(t, tc.rt, tc.remote)
			step := t.TempDir()
			ov := &sandbox.Overlay{Upper: filepath.Join(step, "upper"), Work: filepath.Join(step, "work")}
			res := c.Run(context.Background(), sandbox.Request{Command: "true", Workspace: t.TempDir(), Overlay: ov})
			if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "overlay mode (ECTO_SANDBOX_WORKSPACE=overlay) cannot be applied") ||
				(runtime.GOOS == "linux" && !strings.Contains(res.Reason, tc.want)) || !strings.Contains(res.Reason, "fix: ") {
				t.Fatalf("got %s: %s; want aborted for overlay mode (%s)", res.Status, res.Reason, tc.want)
			}
			if res.Enforced != nil {
				t.Fatalf("an aborted run records enforcement %+v", res.Enforced)
			}
		})
	}
}

// TestOverlayArgv: the read-only workspace mount is unchanged without an
// overlay; with one, the merged view is mounted writable and nothing else
// in the argv differs.
func TestOverlayArgv(t *testing.T) {
	ro := testSpec("podman")
	a := ro.argv()
	if v := flagValues(a, "--mount"); len(v) == 0 || v[0] != "type=bind,source=/srv/ws,target=/workspace,readonly" {
		t.Fatalf("read-only workspace mount %q", v)
	}
	rw := ro
	rw.workspace, rw.writable = "/tmp/ironvise-runtime-1/ironvise-overlay-2/merged", true
	b := rw.argv()
	if v := flagValues(b, "--mount"); len(v) == 0 || v[0] != "type=bind,source=/tmp/ironvise-runtime-1/ironvise-overlay-2/merged,target=/workspace" {
		t.Fatalf("overlay workspace mount %q", v)
	}
	i := slices.Index(b, "type=bind,source=/tmp/ironvise-runtime-1/ironvise-overlay-2/merged,target=/workspace")
	rest := slices.Clone(b)
	rest[i] = "type=bind,source=/srv/ws,target=/workspace,readonly"
	if !slices.Equal(rest, a) {
		t.Fatalf("overlay argv differs beyond the workspace mount:\n%q\n%q", b, a)
	}
}
