package sandbox

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/ironvise/ironvise/internal/secretpaths"
)

// HiddenPaths returns the protected paths of a run (the tier's and the
// request's): absolute ones only, clean, without duplicates, sorted, with
// the real location of each symlink among them added. A mount follows a
// link, so a tier masks the target under its real name and skips the link.
// In lexical order a directory comes before everything under it, so a tier
// masks a parent first and finds its children gone.
//
// secretpaths.Compute already lists each path's real location, but a tier
// does not rely on its caller for what it must mask: Request.Hidden never
// passes through Compute, Options.Hidden is whatever the embedding program
// set, and a link may have been created or re-pointed since the list was
// computed (serve computes it once, at start). A target missing here would
// stay visible, so the tiers resolve again when each command starts (the
// native Linux tier keeps its own list's answer while nothing it read has
// changed: internal/sandbox/native/hiddencache_linux.go).
//
// The real location is filepath.EvalSymlinks' answer, read through one
// secretpaths.Memo for the whole call: the list repeats the same parents
// under every home, and asking the kernel about each name once brings a
// host's list from about 1,600 lstat calls to the number of distinct names
// (docs/operate/performance.md). The memo dies with the call, so the next
// command sees every link as it is then.
func HiddenPaths(lists ...[]string) []string {
	return ResolveHidden(secretpaths.OSLinks{}, lists...).Paths
}

// Hidden is a run's protected paths as HiddenPaths lists them, with what
// resolving them found absent.
type Hidden struct {
	Paths []string
	// Absent holds the entries of Paths whose resolution met a missing
	// name (ENOENT) or a non-directory with more of the path after it
	// (ENOTDIR). An lstat of such an entry, which follows the same links
	// up to its last name, finds nothing a tier masks: nothing at all, or
	// a link (whose target, when it exists, is an entry of its own). A
	// tier that has just resolved the list needs to ask again only about
	// the others.
	Absent map[string]bool
}

// ResolveHidden is HiddenPaths reading the file system through r, under
// one secretpaths.Memo for the call, with the entries found absent: for a
// caller that needs to know which names the answer read (the native tier
// keeps the answer until one of them changes) or which entries need no
// mask. An entry that is relative or not clean is resolved by
// filepath.EvalSymlinks, not through r.
func ResolveHidden(r secretpaths.LinkReader, lists ...[]string) Hidden {
	links := secretpaths.Memo(r)
	return hiddenPaths(func(p string) (string, error) { return secretpaths.RealPath(links, p) }, lists...)
}

// hiddenPaths is ResolveHidden with locate giving a path's real location
// (its tests compare the Memo with filepath.EvalSymlinks on every path).
func hiddenPaths(locate func(string) (string, error), lists ...[]string) Hidden {
	seen := map[string]bool{}
	absent := map[string]bool{}
	var out, located []string
	add := func(p string) string {
		if p = filepath.Clean(p); filepath.IsAbs(p) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
		return p
	}
	for _, l := range lists {
		for _, p := range l {
			clean := add(p)
			r, err := locate(p)
			switch {
			case err == nil:
				located = append(located, add(r))
			case p == clean && filepath.IsAbs(p) && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)):
				// Only a clean entry: "dir/file/" fails where
				// its clean form, listed too, exists.
				absent[p] = true
			}
		}
	}
	// An entry that is another's real location exists (the walks share
	// one memo, so this only guards entries resolved by EvalSymlinks).
	for _, r := range located {
		delete(absent, r)
	}
	slices.Sort(out)
	return Hidden{Paths: out, Absent: absent}
}
