//go:build !linux

package action

import "os"

// openBeneath opens rel below root. Without openat2 the protection is the
// re-check of every component immediately before this call.
func openBeneath(root, rel string) (*os.File, error) { return openFile(root, rel) }
