//go:build linux

package native

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestSeatbeltSelfTestCatchesEachEscape runs the macOS tier's self-test
// through the permissive tier, a real shell with no confinement: each of
// its checks must report the escape it exists for, so none of them can
// pass vacuously.
func TestSeatbeltSelfTestCatchesEachEscape(t *testing.T) {
	requireTool(t, "/bin/bash") // the TCP attempt without nc
	err := seatbeltSelfTest(context.Background(), sandbox.NewPermissive(sandbox.Options{}))
	if !errors.Is(err, sandbox.ErrSelfTest) {
		t.Fatalf("self-test of an unconfined shell = %v; want sandbox.ErrSelfTest", err)
	}
	for _, want := range []string{
		"without enforcement",
		"written outside the workspace",
		"outside the read roots could be read",
		"TCP connection",
		"could signal IronVise",
		"background processes outlived the command",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("self-test error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "did not run through") {
		t.Errorf("the probe command itself failed:\n%v", err)
	}
}

// TestSeatbeltSelfTestPassesConfined runs the same self-test through the
// Linux tier, which refuses everything it checks (and more: the workspace
// is read-only there, which the self-test does not ask about): the probe
// command and the host-side checks raise no false alarm.
func TestSeatbeltSelfTestPassesConfined(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{})
	if err := seatbeltSelfTest(context.Background(), tier); err != nil {
		t.Fatalf("self-test through the Linux tier: %v", err)
	}
}
