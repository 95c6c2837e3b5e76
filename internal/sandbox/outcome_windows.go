//go:build windows

package sandbox

import (
	"os"
	"os/exec"
)

// ProcessOutcome returns the exit code; Windows has no signals.
func ProcessOutcome(ps *os.ProcessState) (exitCode *int, signal string) {
	code := ps.ExitCode()
	return &code, ""
}

// shellArgv is the argv that runs command with cmd.exe.
func shellArgv(command string) []string { return []string{"cmd.exe", "/C", command} }

// killTree: cancellation kills the shell; the native Windows tier uses a
// Job Object to take the whole tree down.
func killTree(cmd *exec.Cmd) {}
