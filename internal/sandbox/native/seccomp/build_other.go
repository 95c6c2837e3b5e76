//go:build !linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
)

// Profile is an assembled filter and its hash. On this platform there is
// none.
type Profile struct {
	SHA256 string
}

// Build fails closed: there is no seccomp profile for this platform.
func Build() (*Profile, error) {
	return nil, fmt.Errorf("seccomp: no profile for %s/%s: %w", runtime.GOOS, runtime.GOARCH, errors.ErrUnsupported)
}

// BuildProxy fails closed: there is no seccomp profile for this platform.
func BuildProxy() (*Profile, error) { return Build() }

// BuildContainer fails closed: there is no seccomp profile for this
// platform.
func BuildContainer(bool) (*Profile, error) { return Build() }

// BuildHTTPSClient fails closed: there is no seccomp profile for this
// platform.
func BuildHTTPSClient(int) (*Profile, error) {
	return nil, fmt.Errorf("seccomp: no https client profile for %s/%s: %w", runtime.GOOS, runtime.GOARCH, errors.ErrUnsupported)
}

// SyscallNumber reports nothing on this platform.
func SyscallNumber(string) (uint32, bool) { return 0, false }
