//go:build linux && !(amd64 || arm64)

package seccomp

import "golang.org/x/sys/unix"

// Profile is an assembled filter and its hash. On this architecture there
// is none (unsupported.go); the type has the Linux fields that the
// launcher's code, built for every Linux, refers to.
type Profile struct {
	Filter []unix.SockFilter
	SHA256 string
}

// FromBytes fails closed: no program is installed on this architecture.
func FromBytes([]byte) (*Profile, error) { return nil, unsupported() }

// Bytes is empty: there is no program.
func (p *Profile) Bytes() []byte { return nil }
