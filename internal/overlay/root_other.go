//go:build !linux

package overlay

import "fmt"

// InheritRoot gives the pending layer's upper directory the owner and
// mode of the workspace root; overlay layers are Linux-only, so here it
// fails closed.
func (p *Pending) InheritRoot(workspace string) error {
	return fmt.Errorf("overlay: inherit the root of %s: %w", workspace, ErrUnsupported)
}
