package native

import "github.com/ironvise/ironvise/internal/sandbox"

// overlayUnsupported is why a native tier without overlay mode (macOS,
// Windows) aborts a request in overlay mode, and "" for one with a
// read-only workspace. Security: such a tier fails closed; it never runs
// the command on the real workspace, read-only or writable, in its place.
func overlayUnsupported(req sandbox.Request) string {
	if req.Overlay == nil {
		return ""
	}
	return "overlay mode is not supported on this tier yet (ECTO_SANDBOX_WORKSPACE=overlay needs the native Linux tier); fix: unset ECTO_SANDBOX_WORKSPACE to run with a read-only workspace, or run IronVise on Linux (docs/reference/sandboxing.md#overlay-workspaces)"
}
