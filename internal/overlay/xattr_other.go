//go:build !linux

package overlay

import (
	"fmt"
	"io/fs"
)

// Overlay layers are a Linux format: elsewhere reading one fails closed
// rather than mistaking a whiteout for a file.

func isWhiteout(p string, _ fs.FileInfo) (bool, error) {
	return false, fmt.Errorf("read layer entry %s: %w", p, ErrUnsupported)
}

func dirOpaque(p string) (bool, error) {
	return false, fmt.Errorf("read layer directory %s: %w", p, ErrUnsupported)
}

func checkMetacopy(p string) error {
	return fmt.Errorf("read layer file %s: %w", p, ErrUnsupported)
}
