//go:build !linux

package redact

// threadCPU is unavailable here; benchmarks report wall time only.
func threadCPU() (int64, bool) { return 0, false }
