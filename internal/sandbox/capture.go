package sandbox

import (
	"strconv"
	"sync"
	"unicode/utf8"
)

// Output limits of checks.md §10.1.
const (
	// CollectLimit is how much of each stream is kept while the command
	// runs; the rest is read, counted and discarded so the command never
	// blocks on a full pipe.
	CollectLimit = 1 << 20
	// StreamCap is the size each stream is cut to before it becomes part
	// of the observation.
	StreamCap = 64 << 10
)

// Collector is an io.Writer that keeps the first CollectLimit bytes written
// to it and counts the total. It is safe for concurrent use.
type Collector struct {
	mu    sync.Mutex
	buf   []byte // guarded by mu
	total int64  // guarded by mu
}

// Write implements io.Writer. It never fails, so the copying goroutine keeps
// draining the command's pipe.
func (c *Collector) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := CollectLimit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Capped returns the stream cut to StreamCap bytes (without splitting a
// UTF-8 sequence) with the truncation marker, and whether it was cut.
func (c *Collector) Capped() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CapStream(c.buf, c.total)
}

// CapStream cuts the collected bytes b of a stream whose full length was
// total to StreamCap bytes, backing off to a UTF-8 boundary, and appends
// "\n[truncated: N bytes omitted]" with N = total − kept (checks.md §10.1).
//
// It mirrors the helper of internal/scan, which the checks pipeline owns;
// the sandbox keeps its own so it does not depend on the checks
// (ARCHITECTURE.md: the checks and the sandbox are independent).
func CapStream(b []byte, total int64) (string, bool) {
	if total < int64(len(b)) {
		total = int64(len(b))
	}
	if total <= StreamCap && int64(len(b)) == total {
		return string(b), false
	}
	keep := min(len(b), StreamCap)
	keep = utf8Boundary(b, keep)
	return string(b[:keep]) + "\n[truncated: " + strconv.FormatInt(total-int64(keep), 10) + " bytes omitted]", true
}

// utf8Boundary backs n off so that b[:n] does not end inside a multi-byte
// UTF-8 sequence that continues at b[n]. Invalid bytes are left alone (the
// decoder turns them into U+FFFD later).
func utf8Boundary(b []byte, n int) int {
	if n >= len(b) {
		return n
	}
	// Walk back over at most UTFMax-1 continuation bytes to the lead byte.
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			// b[i] starts the rune that the cut at n may split.
			if i == n {
				return n
			}
			_, size := utf8.DecodeRune(b[i:])
			if size > 1 && i+size > n {
				return i
			}
			return n
		}
	}
	return n
}
