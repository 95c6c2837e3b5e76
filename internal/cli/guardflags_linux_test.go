//go:build linux

package cli

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/localsock"
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
	env := guardless()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ironvise", "serve", "--workspace", ws, "--no-guard", "--no-guard-confirmed"}, strings.NewReader(""), &out, &errb, config.MapLookup(env))
	}()
	sock := localsock.Path(env["ECTO_DATA_DIR"])
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		select {
		case c := <-done:
			t.Fatalf("serve --no-guard --no-guard-confirmed exited %d: %s", c, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %s", errb.String())
		}
	}
	cancel()
	if c := <-done; c != 0 {
		t.Errorf("serve exit %d: %s", c, errb.String())
	}
	if !strings.Contains(errb.String(), "WARNING: --no-guard") {
		t.Errorf("serve did not warn that the guard is off: %s", errb.String())
	}
}
