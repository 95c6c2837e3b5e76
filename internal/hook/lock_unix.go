//go:build unix

package hook

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock(2) on f, retrying until timeout. The
// kernel drops the lock when the process dies, however it dies, so a
// crashed hook never leaves its agent session locked.
func lockFile(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lock %s: another hook process of this agent session held it for %s (a stuck 'ironvise hook' process?)", f.Name(), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
