//go:build !linux

package launch

import (
	"fmt"
	"os"
	"runtime"
)

// launcherMain: the re-executing launcher exists only on Linux.
func launcherMain([]string) int {
	fmt.Fprintf(os.Stderr, "ironvise: the sandbox launcher is Linux-only (this is %s)\n", runtime.GOOS)
	return ExitFailed
}
