//go:build unix

package server

import "syscall"

// fdLimit returns the soft open-file limit (RLIMIT_NOFILE), or 0 when it
// cannot be read. Go raises the soft limit to the hard one at start, so
// this is what the process may actually use.
func fdLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 {
		return 0
	}
	if r.Cur > 1<<30 {
		return 1 << 30
	}
	return int(r.Cur)
}
