//go:build linux && !(amd64 || arm64)

package seccomp

import (
	"errors"
	"testing"
)

// fromBytes: the launcher installs the program it is handed only through
// FromBytes, which must refuse any program here.
func fromBytes(t *testing.T) {
	if p, err := FromBytes([]byte{0, 0, 0, 0, 0, 0, 0, 0}); p != nil || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("FromBytes: profile %v, error %v; want none and ErrUnsupported", p, err)
	}
}
