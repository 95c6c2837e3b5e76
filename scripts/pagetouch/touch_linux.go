package main

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// measure returns the median microseconds per page of the first write to
// fresh anonymous pages, and of the first write to pages the kernel
// populated beforehand (MADV_POPULATE_WRITE, Linux 5.14; an older
// kernel's refusal is an error).
func measure(pages, rounds int) (fresh, populated float64, err error) {
	size := pages * unix.Getpagesize()
	var f, p []float64
	for range rounds {
		a, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			return 0, 0, fmt.Errorf("mmap %d bytes: %w", size, err)
		}
		f = append(f, perPage(pages, func() { touch(a) }))
		b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			unix.Munmap(a)
			return 0, 0, fmt.Errorf("mmap %d bytes: %w", size, err)
		}
		if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil {
			unix.Munmap(a)
			unix.Munmap(b)
			if errors.Is(err, unix.EINVAL) {
				return 0, 0, errors.New("madvise(MADV_POPULATE_WRITE) is refused: the kernel is older than 5.14")
			}
			return 0, 0, fmt.Errorf("madvise(MADV_POPULATE_WRITE): %w", err)
		}
		p = append(p, perPage(pages, func() { touch(b) }))
		unix.Munmap(a)
		unix.Munmap(b)
	}
	return median(f), median(p), nil
}

// touch writes one byte to every page of m.
func touch(m []byte) {
	ps := unix.Getpagesize()
	for i := 0; i < len(m); i += ps {
		m[i] = 1
	}
}
