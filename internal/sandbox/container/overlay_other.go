//go:build !linux

package container

import (
	"errors"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// errOverlayUnsupported is the overlay mount's error where there is none
// (overlayRefusal refuses first; this is the backstop).
var errOverlayUnsupported = errors.New("overlay mode: overlayfs needs Linux")

// overlayMount is Linux-only (see overlay_linux.go).
type overlayMount struct{ Merged string }

// mountOverlay fails closed: overlayfs is Linux's.
func mountOverlay(_, _ string, _ *sandbox.Overlay) (*overlayMount, error) {
	return nil, errOverlayUnsupported
}

// Unmount has nothing to undo.
func (m *overlayMount) Unmount() error { return nil }
