//go:build !unix

package server

import (
	"errors"
	"fmt"
	"os"
)

// lockFileExclusive is not implemented here: without a lock that dies
// with its process, a stable owner id could be claimed by two live
// processes, so the caller falls back to a per-process id (and orphans are
// recovered once their lease lapses).
func lockFileExclusive(f *os.File) error {
	return fmt.Errorf("server: lock %s: %w", f.Name(), errors.ErrUnsupported)
}
