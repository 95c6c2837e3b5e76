//go:build linux

package cli

import (
	"context"
	"os"
	"testing"

	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/sandbox/native"
)

// TestMain lets this test binary stand in for the ironvise binary when
// IronVise re-executes itself: the native tier runs /proc/self/exe as its
// sandbox launcher, and the guard host starts os.Executable() guard-worker.
func TestMain(m *testing.M) {
	if native.IsLauncher(os.Args) {
		os.Exit(native.LauncherMain(os.Args))
	}
	if len(os.Args) > 1 && os.Args[1] == guard.WorkerArg {
		os.Exit(Run(context.Background(), os.Args, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
