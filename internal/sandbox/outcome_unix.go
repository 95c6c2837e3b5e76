//go:build unix

package sandbox

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProcessOutcome returns the exit code, or the name of the signal that
// killed the process ("SIGKILL").
func ProcessOutcome(ps *os.ProcessState) (exitCode *int, signal string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := unix.SignalName(ws.Signal())
		if name == "" {
			name = SignalName(int(ws.Signal()))
		}
		return nil, name
	}
	code := ps.ExitCode()
	return &code, ""
}

// shellArgv is the argv that runs command with the POSIX shell.
func shellArgv(command string) []string { return []string{"/bin/sh", "-c", command} }

// killTree puts the command in its own process group and makes
// cancellation kill the whole group, not just the shell.
func killTree(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
