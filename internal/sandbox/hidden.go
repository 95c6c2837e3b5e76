package sandbox

import (
	"path/filepath"
	"slices"

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
	return HiddenPathsVia(secretpaths.OSLinks{}, lists...)
}

// HiddenPathsVia is HiddenPaths reading the file system through r, under
// one secretpaths.Memo for the call: for a caller that needs to know which
// names the answer read (the native tier keeps the answer until one of
// them changes). An entry that is relative or not clean is resolved by
// filepath.EvalSymlinks, not through r.
func HiddenPathsVia(r secretpaths.LinkReader, lists ...[]string) []string {
	links := secretpaths.Memo(r)
	return hiddenPaths(func(p string) (string, error) { return secretpaths.RealPath(links, p) }, lists...)
}

// hiddenPaths is HiddenPaths with locate giving a path's real location (its
// tests compare the Memo with filepath.EvalSymlinks on every path).
func hiddenPaths(locate func(string) (string, error), lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p = filepath.Clean(p); filepath.IsAbs(p) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, l := range lists {
		for _, p := range l {
			add(p)
			if r, err := locate(p); err == nil {
				add(r)
			}
		}
	}
	slices.Sort(out)
	return out
}
