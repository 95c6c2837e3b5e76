//go:build unix

package handoff

import (
	"os"
	"syscall"
)

// Exec replaces this process with full running args (args[0] is full):
// same process, descriptors, signals and exit status, as if the caller had
// run full itself. It returns only on failure.
func Exec(full string, args []string) error {
	return syscall.Exec(full, args, os.Environ())
}
