package ledger

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestParallelFirstIsTheFirst checks that the parallel search reports the
// smallest failing index, as a loop from 0 would, whatever the workers'
// scheduling: verification reports the first broken sequence.
func TestParallelFirstIsTheFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	rng := rand.New(rand.NewPCG(7, 9))
	for _, n := range []int{0, 1, 2, 63, 64, 65, 1000, 20000} {
		for range 20 {
			bad := map[int]bool{}
			for range rng.IntN(4) {
				if n > 0 {
					bad[rng.IntN(n)] = true
				}
			}
			want := -1
			for i := range n {
				if bad[i] {
					want = i
					break
				}
			}
			if got := parallelFirst(n, func(i int) bool {
				// Late indexes finish first, so a worker past the first
				// failure reports its own before the earlier one.
				if i < n/2 {
					runtime.Gosched()
				}
				return bad[i]
			}); got != want {
				t.Fatalf("n=%d bad=%v: got %d, want %d", n, bad, got, want)
			}
		}
	}
}

// TestParallelFirstChecksEverythingBeforeTheFirst checks that no index
// before the reported one is skipped.
func TestParallelFirstChecksEverythingBeforeTheFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const n, first = 10000, 7777
	seen := make([]atomic.Bool, n)
	if got := parallelFirst(n, func(i int) bool { seen[i].Store(true); return i >= first }); got != first {
		t.Fatalf("got %d, want %d", got, first)
	}
	for i := range first + 1 {
		if !seen[i].Load() {
			t.Fatalf("index %d was never checked", i)
		}
	}
}
