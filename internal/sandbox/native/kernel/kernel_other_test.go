//go:build !linux

package kernel

import (
	"errors"
	"syscall"
	"testing"
)

func TestStubsFailClosed(t *testing.T) {
	for name, err := range map[string]error{
		"CloseRangeCloexec": CloseRangeCloexec(3), "Setsid": Setsid(), "SetNoNewPrivs": SetNoNewPrivs(),
		"ClearCapabilities": ClearCapabilities(), "SetRlimit": SetRlimit(0, 0, 0),
	} {
		if !errors.Is(err, syscall.ENOSYS) {
			t.Errorf("%s() = %v; want ENOSYS", name, err)
		}
	}
}
