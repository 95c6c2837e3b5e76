//go:build linux

package launch

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// maskScan finds, path by path in Spec.Hide's order, the paths that exist
// to be masked, asking the kernel about as few names as it can. The list
// repeats the same credential stores under every home directory of the
// host, system users' included (/bin, /usr/sbin, …), and most of them are
// absent: 179 of the 188 paths of the development host, 14 of them under
// one missing ~/.config; this scan asks about 128 names for them. Each
// lstat costs a few microseconds in the launcher, on the way to the
// command (docs/operate/performance.md).
//
// Security: a path is skipped without asking only when a directory above
// it, named by a prefix of the path ending before a '/', holds nothing
// now: lstat of that prefix failed with ENOENT or ENOTDIR, or found a file
// that is neither a directory nor a symlink (then the kernel cannot
// resolve anything under it either: it walks the prefix before the rest),
// or this pass covered it with an empty read-only tmpfs. A path that
// names "." or ".." (or is not clean) is always asked about: ".." could
// climb out of a masked directory. Something created after the scan is
// not masked, with or without the memo: the same holds for a path
// created just after an lstat that found it missing.
type maskScan struct {
	lstat func(string) (os.FileInfo, error)
	// empty are directories with nothing under them to mask.
	empty map[string]bool
	// asked are the directories whose lstat this scan made.
	asked map[string]bool
}

// newMaskScan is a scan of n paths. Its memos are sized for them at once:
// grown as they fill, they took a fresh table at each doubling, and each
// fresh page is a page fault on the way to the command.
func newMaskScan(lstat func(string) (os.FileInfo, error), n int) *maskScan {
	return &maskScan{lstat: lstat, empty: make(map[string]bool, n), asked: make(map[string]bool, n)}
}

// find returns p's FileInfo when p exists now, ok false when it does not
// (or cannot be examined: the caller leaves it as it is, as before).
func (m *maskScan) find(p string) (fi os.FileInfo, ok bool) {
	clean := cleanAbs(p)
	if clean && m.underEmpty(p) {
		return nil, false
	}
	fi, err := m.lstat(p)
	if clean {
		m.asked[p] = true
		if m.learn(p, fi, err) && err != nil {
			m.examine(parentDir(p))
		}
	}
	return fi, err == nil
}

// masked records that the directory p is now covered by an empty
// read-only tmpfs: nothing under it is left to mask.
func (m *maskScan) masked(p string) {
	if cleanAbs(p) {
		m.empty[p] = true
	}
}

// examine asks once about the directory d, which a missing path's name
// passes through, and about its own parent while d is missing: the
// absent stores of one home share their parents (~/.config, ~/.var/app).
func (m *maskScan) examine(d string) {
	for d != "/" && d != "" && !m.asked[d] && !m.empty[d] {
		m.asked[d] = true
		fi, err := m.lstat(d)
		if !m.learn(d, fi, err) || err == nil {
			return
		}
		d = parentDir(d)
	}
}

// learn records what lstat's answer about the clean name p says of the
// names under it, and reports whether nothing can be under p.
func (m *maskScan) learn(p string, fi os.FileInfo, err error) bool {
	switch {
	case err == nil && (fi.IsDir() || fi.Mode()&os.ModeSymlink != 0):
		return false // something may be under it
	case err == nil, gone(err):
		// A file, or nothing: the kernel resolves no name under it.
		m.empty[p] = true
		return true
	}
	return false // cannot tell: ask about every path under it
}

// underEmpty reports whether a directory above p is known to be empty.
func (m *maskScan) underEmpty(p string) bool {
	for d := parentDir(p); d != "/" && d != ""; d = parentDir(d) {
		if m.empty[d] {
			return true
		}
	}
	return false
}

// gone reports the errors after which nothing under the name can exist.
func gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// parentDir is the name p's last '/' ends ("/" for a top-level name, ""
// for a name without one). (By hand, for the reason hostKeys gives.)
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0:
		return ""
	case i == 0:
		return "/"
	}
	return p[:i]
}

// cleanAbs reports whether p is absolute and clean: no empty, "." or ".."
// element and no trailing slash.
func cleanAbs(p string) bool {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	for _, e := range strings.Split(p[1:], "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}
