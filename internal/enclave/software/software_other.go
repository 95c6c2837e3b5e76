//go:build !linux

package software

import (
	"errors"
	"fmt"
	"runtime"
)

// Harden fails closed: the software enclave's mlockall, PR_SET_DUMPABLE and
// the /proc checks behind it are Linux-only.
func Harden() (Hardening, error) {
	return Hardening{}, &HardenError{
		Step: "harden",
		Err:  fmt.Errorf("not available on %s: %w", runtime.GOOS, errors.ErrUnsupported),
		Fix:  "run IronVise on Linux for GUARD_ENCLAVE=software, " + FixNone,
	}
}

// NewSecret fails closed outside Linux.
func NewSecret(n int) (*Secret, error) {
	return nil, fmt.Errorf("software enclave: secret on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// Close does nothing: no Secret exists outside Linux.
func (s *Secret) Close() error { return nil }
