//go:build !linux || !(amd64 || arm64)

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
)

// The profiles are written for linux/amd64 and linux/arm64 (the syscall
// table, sysnum.txt, holds those two). Everywhere else every constructor
// fails closed and the native tier reports itself unavailable; the
// Profile type differs by platform (build_other.go, build_linuxother.go).

func unsupported() error {
	return fmt.Errorf("seccomp: no profile for %s/%s: %w", runtime.GOOS, runtime.GOARCH, errors.ErrUnsupported)
}

// Build fails closed: there is no seccomp profile for this platform.
func Build() (*Profile, error) { return nil, unsupported() }

// BuildProxy fails closed.
func BuildProxy() (*Profile, error) { return nil, unsupported() }

// BuildContainer fails closed.
func BuildContainer(bool) (*Profile, error) { return nil, unsupported() }

// BuildHTTPSClient fails closed.
func BuildHTTPSClient(int) (*Profile, error) { return nil, unsupported() }

// SyscallNumber reports nothing on this platform.
func SyscallNumber(string) (uint32, bool) { return 0, false }
