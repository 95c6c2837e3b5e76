// Command pagetouch measures what this machine charges a process for the
// first write to a page of fresh anonymous memory, the cost that decides
// how long a new process takes to start here.
//
// # Usage
//
//	go run ./scripts/pagetouch [-pages N] [-rounds N]
//
// It prints one line, the median over the rounds of the microseconds per
// page, and the same for pages populated first with
// madvise(MADV_POPULATE_WRITE) and written after. scripts/bench-exec.sh
// prints it beside the load average.
//
// # Why it matters
//
// Every process IronVise starts for a command (the ironvise-exec client,
// the sandbox launcher, the command itself) is a new address space whose
// pages are faulted in one by one as they are first written. Where that
// costs 10–17 µs a page, as on the development host, a Go program's start
// (150–250 faults) outweighs everything else a daemon exec does
// (docs/operate/performance-log.md#exec-2026-12-04-page-faults). The populated
// figure is the first write to pages the kernel has already put in the
// page tables: where it stays high, the cost is not the guest kernel's
// fault handling alone.
//
// It runs on Linux only; elsewhere it says so and exits 1.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"
)

func main() {
	pages := flag.Int("pages", 256, "pages written per round")
	rounds := flag.Int("rounds", 7, "rounds; the median is printed")
	flag.Parse()
	if *pages < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "pagetouch: -pages and -rounds must be at least 1")
		os.Exit(2)
	}
	fresh, populated, err := measure(*pages, *rounds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pagetouch:", err)
		os.Exit(1)
	}
	fmt.Printf("first write to a fresh page: %.1f µs (%.1f µs after MADV_POPULATE_WRITE); %d pages, median of %d rounds\n",
		fresh, populated, *pages, *rounds)
}

// median returns the middle of v (the upper one of an even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// perPage times write over n pages and returns microseconds per page.
func perPage(n int, write func()) float64 {
	t := time.Now()
	write()
	return float64(time.Since(t).Nanoseconds()) / 1e3 / float64(n)
}
