package main

import "testing"

// The probe reports a cost for both kinds of page.
func TestMeasure(t *testing.T) {
	fresh, populated, err := measure(64, 3)
	if err != nil {
		t.Fatal(err)
	}
	if fresh <= 0 || populated <= 0 {
		t.Fatalf("measure = %v, %v µs per page; want both above zero", fresh, populated)
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
