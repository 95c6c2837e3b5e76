//go:build unix

package main

import (
	"os"
	"syscall"
)

// handOff replaces this process with full running args (args[0] is full):
// same process, descriptors, signals and exit status, as if the caller had
// run ironvise exec itself. It returns only on failure.
func handOff(full string, args []string) error {
	return syscall.Exec(full, args, os.Environ())
}
