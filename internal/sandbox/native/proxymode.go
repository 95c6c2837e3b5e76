package native

import "github.com/ironvise/ironvise/internal/sandbox"

// proxyUnsupported is why a native tier without proxy mode (macOS,
// Windows) aborts a request in proxy mode, and "" for one in mode none.
// Security: such a tier fails closed; it never runs the command with the
// host's network, nor without network as if the mode were none.
func proxyUnsupported(req sandbox.Request) string {
	if req.Egress == nil {
		return ""
	}
	return "proxy mode is not supported on this tier yet (ECTO_SANDBOX_NETWORK=proxy needs the native Linux tier); fix: set ECTO_SANDBOX_NETWORK=none, or run IronVise on Linux (docs/reference/sandboxing.md#network-egress)"
}
