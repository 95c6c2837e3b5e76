package scanbench

import "golang.org/x/sys/unix"

// threadCPU returns the CPU time of the calling thread. Benchmarks report
// it beside wall time because the build machines are shared: wall time
// includes the time other processes held the core.
func threadCPU() (int64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return ts.Nano(), true
}
