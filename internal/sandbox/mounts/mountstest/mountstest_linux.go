//go:build linux

// Package mountstest makes the bind mounts the tiers' tests of other names
// need (package sandbox/mounts): the same file under a second path.
package mountstest

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Bind mounts src at dst (made first) for the rest of the test, and skips
// the test where bind mounts cannot be made (not root).
func Bind(t testing.TB, src, dst string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make bind mounts")
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount %s at %s: %v", src, dst, err)
	}
	t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
}
