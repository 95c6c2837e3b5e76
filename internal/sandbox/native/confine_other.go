//go:build !linux

package native

import (
	"errors"
	"fmt"
	"runtime"
)

// ConfineSelf fails closed: IronVise has no self-confinement for this OS.
// A best-effort profile ([Profile.BestEffort]) succeeds instead, and the
// returned Confinement says why the process is unconfined.
func ConfineSelf(p Profile) (Confinement, error) {
	if err := p.validate(); err != nil {
		return Confinement{}, err
	}
	err := fmt.Errorf("native: confine: no self-confinement on %s (Landlock and seccomp are Linux-only): %w", runtime.GOOS, errors.ErrUnsupported)
	if !p.bestEffort {
		return Confinement{}, err
	}
	return Confinement{Profile: p.name, Unconfined: err}, nil
}
