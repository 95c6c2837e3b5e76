//go:build windows

package overlay

import (
	"fmt"
	"os"
)

// lockFile opens path without locking it: overlay mode runs on the native
// Linux tier and rootful Podman only (every Windows tier aborts an overlay
// run), so no two processes share a store's session on Windows.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("overlay: open lock %s: %w", path, err)
	}
	return f, nil
}
