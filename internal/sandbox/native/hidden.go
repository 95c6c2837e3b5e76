package native

import (
	"path/filepath"
	"slices"
)

// hiddenPaths cleans, deduplicates and sorts paths, adding the target of
// each symlink among them: a mount follows a link, so the launcher masks
// the target under its real name and skips the link. In lexical order a
// directory comes before everything under it, so the launcher masks a
// parent first and finds its children gone.
func hiddenPaths(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p = filepath.Clean(p); filepath.IsAbs(p) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		add(p)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			add(real)
		}
	}
	slices.Sort(out)
	return out
}
