package main

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The probe times page faults, not writes: a first write to fresh pages
// costs many times a write to the same pages once they are mapped (a
// fault is microseconds where a mapped write is nanoseconds on any
// machine), so a probe that skipped its pages, or timed mapped ones,
// fails here.
func TestMeasureTimesFaults(t *testing.T) {
	const pages = 256
	fresh, populated, err := measure(pages, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(-1, 0, pages*unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	touch(m)
	var mapped []float64
	for range 3 {
		mapped = append(mapped, perPage(pages, func() { touch(m) }))
	}
	again := median(mapped)
	if fresh < 5*again || populated <= 0 {
		t.Fatalf("fresh %.3f µs, populated %.3f µs, mapped %.3f µs per page; want fresh at least 5 times mapped, populated above zero", fresh, populated, again)
	}
}

func TestMedian(t *testing.T) {
	in := []float64{5, 1, 4, 2, 3}
	if m := median(in); m != 3 {
		t.Fatalf("median = %v, want 3", m)
	}
	if in[0] != 5 {
		t.Fatal("median sorted its argument in place")
	}
	if m := median([]float64{2, 1}); m != 2 {
		t.Fatalf("median of two = %v, want the upper one, 2", m)
	}
}
