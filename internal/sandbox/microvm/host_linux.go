package microvm

import (
	"os/exec"
	"syscall"
)

// platformError is nil: Linux has KVM.
func platformError() error { return nil }

// confine starts the VMM in its own process group, killed with IronVise,
// and makes cancellation kill the whole group.
func confine(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
