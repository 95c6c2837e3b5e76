//go:build unix

package server

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFileExclusive takes an exclusive flock(2) on f without waiting. The
// kernel drops it when the process dies, however it dies, which is what
// lets a restarted serve know its predecessor is gone.
func lockFileExclusive(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errOwnerLocked
	}
	if err != nil {
		return fmt.Errorf("server: lock %s: %w", f.Name(), err)
	}
	return nil
}
