//go:build linux

package cli

import (
	"strings"
	"testing"
)

// TestServeGuardFlags: serve takes audit's guard switches with audit's
// meaning — one alone is a usage error; both start it without a guard
// where it would otherwise refuse to start.
func TestServeGuardFlags(t *testing.T) {
	ws := t.TempDir()
	guardless := func() map[string]string {
		return cliEnv(t, "LLM_BACKEND", "openai", "OPENAI_MODEL", "m", "OPENAI_BASE_URL", "http://127.0.0.1:9/v1", "ECTO_BIND_PORT", "0")
	}
	code, _, errOut := runCLI(t, guardless(), "", "serve", "--workspace", ws)
	if code != ExitUsage || !strings.Contains(errOut, "--no-guard --no-guard-confirmed") {
		t.Fatalf("serve without a guard: exit %d %s", code, errOut)
	}
	for _, flag := range []string{"--no-guard", "--no-guard-confirmed"} {
		code, _, errOut := runCLI(t, guardless(), "", "serve", "--workspace", ws, flag)
		if code != ExitUsage || !strings.Contains(errOut, "takes both --no-guard and --no-guard-confirmed") {
			t.Fatalf("serve %s alone: exit %d %s", flag, code, errOut)
		}
	}
	// GUARD_REQUIRED=true: the guard is required and none is configured.
	env := guardless()
	env["GUARD_REQUIRED"] = "true"
	stop, stderr := startServeArgs(t, env, "--workspace", ws, "--no-guard", "--no-guard-confirmed")
	stop()
	if !strings.Contains(stderr.String(), "WARNING: --no-guard") {
		t.Errorf("serve did not warn that the guard is off: %s", stderr.String())
	}
}
