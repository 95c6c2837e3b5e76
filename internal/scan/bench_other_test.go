//go:build !linux

package scan

// threadCPU is unavailable here; benchmarks report wall time only.
func threadCPU() (int64, bool) { return 0, false }
