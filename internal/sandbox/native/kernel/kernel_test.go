//go:build linux

package kernel

import "testing"

func TestLandlockABI(t *testing.T) {
	v, err := LandlockABI()
	if err != nil {
		t.Fatalf("LandlockABI: %v", err)
	}
	if v < 1 {
		t.Fatalf("LandlockABI = %d; want >= 1", v)
	}
}
