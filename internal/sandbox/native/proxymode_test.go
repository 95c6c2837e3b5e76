package native

import (
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestProxyUnsupported: the reason the macOS and Windows tiers abort a
// proxy-mode run with, and nothing for mode none.
func TestProxyUnsupported(t *testing.T) {
	if r := proxyUnsupported(sandbox.Request{Command: "true"}); r != "" {
		t.Fatalf("mode none refused: %q", r)
	}
	r := proxyUnsupported(sandbox.Request{Command: "true", Egress: egress.NewRules(nil, nil)})
	if !strings.HasPrefix(r, "proxy mode is not supported on this tier yet") || !strings.Contains(r, "fix: set ECTO_SANDBOX_NETWORK=none") {
		t.Fatalf("reason %q", r)
	}
}

// TestOverlayUnsupported: the reason the macOS and Windows tiers abort an
// overlay-mode run with, and nothing for a read-only workspace.
func TestOverlayUnsupported(t *testing.T) {
	if r := overlayUnsupported(sandbox.Request{Command: "true"}); r != "" {
		t.Fatalf("read-only workspace refused: %q", r)
	}
	r := overlayUnsupported(sandbox.Request{Command: "true", Overlay: &sandbox.Overlay{Upper: "/u", Work: "/w"}})
	if !strings.HasPrefix(r, "overlay mode is not supported on this tier yet") || !strings.Contains(r, "fix: unset ECTO_SANDBOX_WORKSPACE") {
		t.Fatalf("reason %q", r)
	}
}
