package container

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The container sees the host only through the workspace bind mount, so a
// protected path (sandbox.Options.Hidden: the data directory, ~/.ssh, …)
// is visible exactly when it lies inside the workspace. Each such path is
// covered at its container-side location with a read-only bind of an
// empty directory or an empty file, made per run in a private directory.
// A tmpfs would do for directories with Docker, but Podman copies the
// covered directory's contents into a tmpfs ("tmpcopyup") by default.

// mask is one covering mount.
type mask struct {
	source string // an empty directory or an empty file on the host
	target string // the container-side path
}

// maskPlan is what covers the protected paths of one run.
type maskPlan struct {
	// dirs and files are the container-side targets to cover with an
	// empty directory and an empty file.
	dirs, files []string
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// planMasks decides the covering mounts for workspace ws (absolute,
// symlink-resolved). It refuses a workspace inside a protected path (the
// mount would have to hide the workspace itself) and any path it cannot
// examine or express in a --mount value: failing closed, never running
// with a secret in view.
func planMasks(ws string, hidden []string) (maskPlan, error) {
	var plan maskPlan
	var covered []string // host paths already masked: nothing below them is visible
	for _, h := range hidden {
		if within(ws, h) {
			return plan, fmt.Errorf("workspace %s lies inside the protected path %s, which is never shown to a command; fix: use a workspace outside it", ws, h)
		}
		if !within(h, ws) || slices.ContainsFunc(covered, func(c string) bool { return within(h, c) }) {
			continue // outside the workspace the container sees nothing
		}
		fi, err := os.Lstat(h)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return plan, fmt.Errorf("protected path %s: %w; fix: make it examinable by IronVise or move it out of the workspace", h, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			// Inside the container a symlink resolves against the
			// container's own tree; its host target is in the set
			// itself and masked there if it lies in the workspace.
			continue
		}
		rel, err := filepath.Rel(ws, h)
		if err != nil {
			return plan, fmt.Errorf("protected path %s: %w", h, err)
		}
		target := path.Join(workspaceTarget, filepath.ToSlash(rel))
		if !mountSafe(target) {
			return plan, fmt.Errorf("protected path %q inside the workspace cannot be masked: its name contains a comma, a quote or a line break; fix: rename it or use another workspace", h)
		}
		covered = append(covered, h)
		if fi.IsDir() {
			plan.dirs = append(plan.dirs, target)
		} else {
			plan.files = append(plan.files, target)
		}
	}
	return plan, nil
}

// empty reports whether nothing needs covering.
func (p maskPlan) empty() bool { return len(p.dirs)+len(p.files) == 0 }

// mounts creates the empty sources in dir (a private directory of this
// run) and returns the mounts, parents first.
func (p maskPlan) mounts(dir string) ([]mask, error) {
	if p.empty() {
		return nil, nil
	}
	emptyDir, emptyFile := filepath.Join(dir, "empty-dir"), filepath.Join(dir, "empty-file")
	if !mountSafe(emptyDir) {
		return nil, fmt.Errorf("the private directory %q cannot be bind-mounted: its path contains a comma, a quote or a line break; fix: set TMPDIR to a plain path", dir)
	}
	if err := os.Mkdir(emptyDir, 0o555); err != nil {
		return nil, fmt.Errorf("create the empty directory that hides protected paths: %w", err)
	}
	if err := os.WriteFile(emptyFile, nil, 0o444); err != nil {
		return nil, fmt.Errorf("create the empty file that hides protected paths: %w", err)
	}
	var out []mask
	for _, t := range p.dirs {
		out = append(out, mask{source: emptyDir, target: t})
	}
	for _, t := range p.files {
		out = append(out, mask{source: emptyFile, target: t})
	}
	slices.SortFunc(out, func(a, b mask) int { return strings.Compare(a.target, b.target) })
	return out, nil
}
