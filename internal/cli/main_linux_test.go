//go:build linux

package cli

import (
	"os"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox/native"
)

// TestMain dispatches the sandbox launcher: the native tier re-executes
// /proc/self/exe, which in these tests is the test binary.
func TestMain(m *testing.M) {
	if native.IsLauncher(os.Args) {
		os.Exit(native.LauncherMain(os.Args))
	}
	os.Exit(m.Run())
}
