//go:build !unix

package hook

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// lockFile is not implemented here: without a lock that dies with its
// process, two hook processes could create two sessions for one agent
// session, so hooks refuse to run (and so block).
func lockFile(f *os.File, _ time.Duration) error {
	return fmt.Errorf("lock %s: %w: agent hooks need flock(2) and run on Unix systems only", f.Name(), errors.ErrUnsupported)
}
