//go:build !linux

package microvm

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
)

// platformError fails closed: Firecracker needs Linux KVM.
func platformError() error {
	return fmt.Errorf("microvm: Firecracker needs Linux with KVM, not %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// confine is unused where the tier is unavailable.
func confine(*exec.Cmd) {}
