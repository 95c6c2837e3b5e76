//go:build !linux && !darwin && !windows

package native

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// New returns a tier that fails closed: there is no native sandbox for this
// OS, and every command is aborted.
func New(opts sandbox.Options) (sandbox.Tier, error) {
	name := sandbox.NativeTierName(runtime.GOOS)
	return sandbox.NewUnavailable(&sandbox.UnavailableError{
		Tier: name, Reason: "no native sandbox for " + runtime.GOOS,
		Fix: "set ECTO_DOCKER_IMAGE to use the container tier",
		Err: fmt.Errorf("native: %s: %w", runtime.GOOS, errors.ErrUnsupported),
	}), nil
}
