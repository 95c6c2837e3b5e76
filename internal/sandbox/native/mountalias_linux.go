//go:build linux

package native

import (
	"errors"
	"slices"

	"github.com/ironvise/ironvise/internal/sandbox/mounts"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
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
