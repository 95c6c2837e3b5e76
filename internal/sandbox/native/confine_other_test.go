//go:build !linux

package native

import (
	"errors"
	"testing"
)

func TestConfineSelfFailsClosed(t *testing.T) {
	c, err := ConfineSelf(HTTPSClient())
	if !errors.Is(err, errors.ErrUnsupported) || c.Confined() {
		t.Fatalf("ConfineSelf = %+v, %v; want an error wrapping errors.ErrUnsupported", c, err)
	}
	c, err = ConfineSelf(HTTPSClient().BestEffort())
	if err != nil || c.Confined() || !errors.Is(c.Unconfined, errors.ErrUnsupported) || c.Profile != "https-client" {
		t.Fatalf("best effort: %+v, %v; want success that says it is unconfined", c, err)
	}
}
