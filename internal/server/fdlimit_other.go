//go:build !unix

package server

// fdLimit returns 0: this OS has no per-process open-file limit to read,
// and connectionCap falls back to a fixed cap.
func fdLimit() int { return 0 }
