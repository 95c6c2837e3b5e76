//go:build !linux

package scanbench

// threadCPU is unavailable here; benchmarks report wall time only.
func threadCPU() (int64, bool) { return 0, false }
