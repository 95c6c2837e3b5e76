//go:build linux && !(amd64 || arm64)

package seccomp

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Profile is an assembled filter and its hash. On this architecture there
// is none: the profiles are written for amd64 and arm64 (the syscall
// table, sysnum.txt, holds those two), so every constructor fails closed
// and the native tier reports itself unavailable.
type Profile struct {
	Filter []unix.SockFilter
	SHA256 string
}

func unsupported() error {
	return fmt.Errorf("seccomp: no profile for %s/%s: %w", runtime.GOOS, runtime.GOARCH, errors.ErrUnsupported)
}

// Build fails closed: there is no seccomp profile for this architecture.
func Build() (*Profile, error) { return nil, unsupported() }

// BuildProxy fails closed.
func BuildProxy() (*Profile, error) { return nil, unsupported() }

// BuildContainer fails closed.
func BuildContainer(bool) (*Profile, error) { return nil, unsupported() }

// BuildHTTPSClient fails closed.
func BuildHTTPSClient(int) (*Profile, error) { return nil, unsupported() }

// FromBytes fails closed: no program is installed on this architecture.
func FromBytes([]byte) (*Profile, error) { return nil, unsupported() }

// Bytes is empty: there is no program.
func (p *Profile) Bytes() []byte { return nil }

// SyscallNumber reports nothing on this architecture.
func SyscallNumber(string) (uint32, bool) { return 0, false }
