//go:build !linux || !(amd64 || arm64)

package seccomp

import (
	"errors"
	"testing"
)

// Where there is no profile, nothing yields one: the native tier, which
// builds its command's profile first, reports itself unavailable and runs
// nothing. On Linux outside amd64 and arm64 this runs under qemu-user in
// .ci/run (make cross-test).
func TestNoProfileFailsClosed(t *testing.T) {
	for name, build := range map[string]func() (*Profile, error){
		"Build":            Build,
		"BuildProxy":       BuildProxy,
		"BuildContainer":   func() (*Profile, error) { return BuildContainer(true) },
		"BuildHTTPSClient": func() (*Profile, error) { return BuildHTTPSClient(443) },
	} {
		if p, err := build(); p != nil || !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s: profile %v, error %v; want none and ErrUnsupported", name, p, err)
		}
	}
	if _, ok := SyscallNumber("read"); ok {
		t.Error("SyscallNumber knows a number without a syscall table")
	}
	fromBytes(t)
}
