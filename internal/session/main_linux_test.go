//go:build linux

package session

import (
	"os"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox/native"
)

// TestMain lets this test binary stand in for the ironvise binary: the
// native tier runs /proc/self/exe as its sandbox launcher.
func TestMain(m *testing.M) {
	if native.IsLauncher(os.Args) {
		os.Exit(native.LauncherMain(os.Args))
	}
	os.Exit(m.Run())
}
