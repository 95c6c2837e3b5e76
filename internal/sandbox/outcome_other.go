//go:build !unix && !windows

package sandbox

import (
	"os"
	"os/exec"
)

// ProcessOutcome returns the exit code.
func ProcessOutcome(ps *os.ProcessState) (exitCode *int, signal string) {
	code := ps.ExitCode()
	return &code, ""
}

func shellArgv(command string) []string { return []string{"/bin/sh", "-c", command} }

func killTree(cmd *exec.Cmd) {}
