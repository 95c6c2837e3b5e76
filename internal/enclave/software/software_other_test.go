//go:build !linux

package software

import (
	"errors"
	"testing"
)

func TestSoftwareUnsupported(t *testing.T) {
	if _, err := Harden(); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Harden: %v; want ErrUnsupported", err)
	}
	if _, err := NewSecret(32); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("NewSecret: %v; want ErrUnsupported", err)
	}
}
