//go:build linux

package native

import (
	"errors"
	"runtime"
	"slices"

	"github.com/ironvise/ironvise/internal/sandbox/mounts"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
	"github.com/ironvise/ironvise/internal/secretpaths"
)

// withMountAliases is hidden and every other name that its paths and the
// launcher's own masks (launch.FixedMasks) have through the current mounts
// (package mounts says why), sorted and without duplicates (parents before
// children, as the launcher masks them). The launcher's namespace is a copy
// of this one under the same mount table (a ready launcher started under
// another is not used: spare_linux.go). A mount made on the host after the
// command's namespace was built reaches it only through shared
// propagation, which takes a host root; that window is the one
// hiddencache_linux.go describes for links.
func withMountAliases(hidden []string) ([]string, error) {
	aliases, err := mounts.Aliases(append(slices.Clone(hidden), launch.FixedMasks()...))
	if err != nil {
		return nil, errors.New("read the mount table for other names of the protected paths: " + err.Error() + "; nothing was run")
	}
	if len(aliases) == 0 {
		return hidden, nil
	}
	out := append(slices.Clone(hidden), aliases...)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// notSystemRootByMount refuses a workspace that is a system directory
// under another name a mount gives it (/srv/etc bound from /etc, the
// host's root mounted at /host), as secretpaths.CheckWorkspace refuses the
// directory by its own name.
func notSystemRootByMount(ws string) error {
	for _, r := range secretpaths.SystemRoots(runtime.GOOS) {
		aliases, err := mounts.Aliases([]string{r})
		if err != nil {
			return errors.New("read the mount table for other names of the system directories: " + err.Error() + "; nothing was run")
		}
		if slices.Contains(aliases, ws) {
			return &secretpaths.WorkspaceError{Workspace: ws, Reason: "it is the system directory " + r + " under another name, through a mount: every command could read the host's files in it"}
		}
	}
	return nil
}
