//go:build linux

package native

import (
	"os"
	"testing"
)

// TestMain dispatches the launcher: the tier re-executes /proc/self/exe,
// which in tests is this test binary.
func TestMain(m *testing.M) {
	if IsLauncher(os.Args) {
		os.Exit(LauncherMain(os.Args))
	}
	os.Exit(m.Run())
}
