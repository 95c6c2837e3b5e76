package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSetRlimitAllocatesNothing: the launcher sets the address-space cap
// with SetRlimit and then execs; an allocation after the cap can need a
// mapping the cap refuses, which aborts the launch.
func TestSetRlimitAllocatesNothing(t *testing.T) {
	cur, max, err := GetRlimit(unix.RLIMIT_NOFILE)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := SetRlimit(unix.RLIMIT_NOFILE, cur, max); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("SetRlimit allocates %v times per call; want 0", allocs)
	}
}
