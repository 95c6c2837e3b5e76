//go:build windows

package handoff

import (
	"errors"
	"os"
	"os/exec"
)

// Exec runs full with args (args[0] is full) on this process's console
// and standard streams, and exits with its exit code: Windows cannot
// replace a process. It returns only when full could not be started.
func Exec(full string, args []string) error {
	cmd := exec.Command(full, args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err == nil || errors.As(err, &ee) {
		os.Exit(cmd.ProcessState.ExitCode())
	}
	return err
}
