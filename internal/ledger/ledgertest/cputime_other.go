//go:build !unix

package ledgertest

import "time"

// cpuTime is unknown here: reportCPU reports nothing.
func cpuTime() time.Duration { return -1 }
