//go:build !linux

package container

import "github.com/ironvise/ironvise/internal/sandbox"

// overlayMount is Linux-only (see overlay_linux.go).
type overlayMount struct{ Merged string }

// mountOverlay fails closed: overlayfs is Linux's.
func mountOverlay(_, _ string, _ *sandbox.Overlay) (*overlayMount, error) {
	return nil, errOverlayUnsupported
}

// Unmount has nothing to undo.
func (m *overlayMount) Unmount() error { return nil }
