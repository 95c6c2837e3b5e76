//go:build !linux

package main

import "errors"

// measure is Linux only: the probe uses madvise(MADV_POPULATE_WRITE).
func measure(int, int) (float64, float64, error) {
	return 0, 0, errors.New("runs on Linux only")
}
