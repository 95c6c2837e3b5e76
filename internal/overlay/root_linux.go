package overlay

import (
	"fmt"
	"os"
	"syscall"
)

// InheritRoot gives the pending layer's upper directory the owner and
// mode of the workspace root. overlayfs shows the upper directory's
// attributes as the merged root's, so without this the command would
// see a root-owned 0700 workspace and could not enter it. The layer
// stays private: its step directory is 0700.
func (p *Pending) InheritRoot(workspace string) error {
	fi, err := os.Stat(workspace)
	if err != nil {
		return fmt.Errorf("overlay: workspace: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("overlay: workspace %s: no owner information: %w", workspace, ErrUnsupported)
	}
	up := p.Upper()
	if err := os.Lchown(up, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("overlay: give the layer the workspace's owner: %w", err)
	}
	if err := os.Chmod(up, fi.Mode()&(os.ModePerm|os.ModeSetgid|os.ModeSticky)); err != nil {
		return fmt.Errorf("overlay: give the layer the workspace's mode: %w", err)
	}
	return nil
}
