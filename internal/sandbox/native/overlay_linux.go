//go:build linux

package native

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
	"github.com/ironvise/ironvise/internal/secretpaths"
)

// containerOverlayRefused is why container mode aborts an overlay-mode run.
//
// The overlay must be mounted in a mount namespace of the command's own:
// container mode runs the command in the container's, where a mount on the
// workspace would be IronVise's own view too (and every later command's),
// and where IronVise usually lacks the privilege to mount at all. Landlock
// alone cannot redirect writes to another directory.
const containerOverlayRefused = "overlay mode (ECTO_SANDBOX_WORKSPACE=overlay) mounts an overlayfs on the workspace in a mount namespace of the command's own, and container mode (ECTO_SANDBOX_CONTAINER_MODE=true) creates none; fix: unset ECTO_SANDBOX_WORKSPACE to run with a read-only workspace, or unset ECTO_SANDBOX_CONTAINER_MODE and let IronVise create namespaces (docs/reference/sandboxing.md#overlay-workspaces)"

// workspaceOverlay is sandbox.Enforced.Workspace of an overlay-mode run.
const workspaceOverlay = "overlay"

// overlayFix is the fix named for a layer stack the tier refuses.
const overlayFix = "fix: IronVise creates a fresh, empty upper and work directory for each command under its data directory; check that the data directory is on a local file system with extended attributes (ext4, xfs, btrfs) and outside the workspace, or unset ECTO_SANDBOX_WORKSPACE to run with a read-only workspace (docs/reference/sandboxing.md#overlay-workspaces)"

// maxOverlayData is the room for overlayfs's mount options: mount(2)
// copies one page of them.
const maxOverlayData = 4095

// checkOverlay checks an overlay-mode request's layer stack against the
// resolved workspace and returns what the launcher mounts. It also gives
// the fresh upper directory the workspace's owner and mode, so that the
// overlay's root looks like the workspace's: overlayfs shows a merged
// directory with its upper directory's attributes.
//
// Security: fail closed, before any launcher sees the stack. The kernel
// refuses some of these itself (an upper inside a lower layer); the tier
// does not rely on it, and says what is wrong and how to fix it:
//   - each directory must exist, be a directory, and lie outside the
//     workspace and every other directory of the stack (a layer inside the
//     workspace would show the command its own earlier writes as the
//     workspace, an upper inside the workspace would be written through
//     itself);
//   - the upper and work directories must be empty and on one file system
//     (overlayfs renames between them);
//   - no path may hold ',', ':' or '\': they separate overlayfs's options;
//   - the workspace must have a mount of its own: not /, and not holding
//     the scratch directories.
func (t *Tier) checkOverlay(ws string, o *sandbox.Overlay) (*launch.Overlay, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("overlay mode: "+format+"; "+overlayFix, args...)
	}
	if ws == "/" || secretpaths.Within(t.scratchDir, ws) {
		return nil, bad("the workspace %s holds the scratch directories (%s), which must stay outside its overlay", ws, t.scratchDir)
	}
	if o.Upper == "" || o.Work == "" {
		return nil, bad("the request names no upper or no work directory (upper %q, work %q)", o.Upper, o.Work)
	}
	resolve := func(role, p string) (string, error) {
		if !filepath.IsAbs(p) {
			return "", bad("the %s directory %q is not an absolute path", role, p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", bad("the %s directory %s: %v", role, p, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return "", bad("the %s directory %s: %v", role, p, err)
		}
		if !fi.IsDir() {
			return "", bad("the %s directory %s is not a directory", role, p)
		}
		if strings.ContainsAny(real, ",:\\") || strings.ContainsFunc(real, func(r rune) bool { return r < 0x20 }) {
			return "", bad("the %s directory %s holds a ',', ':', '\\' or control character, which overlayfs's mount options cannot carry", role, real)
		}
		return real, nil
	}
	if strings.ContainsAny(ws, ",:\\") || strings.ContainsFunc(ws, func(r rune) bool { return r < 0x20 }) {
		return nil, bad("the workspace %s holds a ',', ':', '\\' or control character, which overlayfs's mount options cannot carry; rename it", ws)
	}
	out := &launch.Overlay{}
	var err error
	if out.Upper, err = resolve("upper", o.Upper); err != nil {
		return nil, err
	}
	if out.Work, err = resolve("work", o.Work); err != nil {
		return nil, err
	}
	type dir struct{ role, path string }
	all := []dir{{"workspace", ws}, {"upper", out.Upper}, {"work", out.Work}}
	for i, l := range o.Layers {
		real, err := resolve(fmt.Sprintf("layer %d", i+1), l)
		if err != nil {
			return nil, err
		}
		out.Layers = append(out.Layers, real)
		all = append(all, dir{fmt.Sprintf("layer %d", i+1), real})
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if secretpaths.Within(a.path, b.path) || secretpaths.Within(b.path, a.path) {
				return nil, bad("the %s directory %s and the %s directory %s are the same or one holds the other", a.role, a.path, b.role, b.path)
			}
		}
	}
	for _, d := range []dir{{"upper", out.Upper}, {"work", out.Work}} {
		if empty, err := emptyDir(d.path); err != nil || !empty {
			if err == nil {
				err = errors.New("it is not empty")
			}
			return nil, bad("the %s directory %s must be a fresh, empty directory: %v", d.role, d.path, err)
		}
	}
	var up, wk unix.Stat_t
	if err := unix.Stat(out.Upper, &up); err != nil {
		return nil, bad("stat %s: %v", out.Upper, err)
	}
	if err := unix.Stat(out.Work, &wk); err != nil {
		return nil, bad("stat %s: %v", out.Work, err)
	}
	if up.Dev != wk.Dev {
		return nil, bad("the upper directory %s and the work directory %s are on different file systems", out.Upper, out.Work)
	}
	data := len("lowerdir=,upperdir=,workdir=,") + len(launch.OverlayOptions) + len(ws) + len(out.Upper) + len(out.Work)
	for _, l := range out.Layers {
		data += len(l) + 1
	}
	if data > maxOverlayData {
		return nil, bad("the mount options of %d layers take %d bytes, over the kernel's %d; the session's layers must be squashed into fewer", len(out.Layers), data, maxOverlayData)
	}
	if err := matchOwner(out.Upper, ws); err != nil {
		return nil, bad("give the upper directory %s the workspace's owner and mode: %v; run IronVise as the workspace's owner, or as root", out.Upper, err)
	}
	return out, nil
}

// emptyDir reports whether dir has no entries.
func emptyDir(dir string) (bool, error) {
	// Raw system calls into a buffer on the stack: this runs between a
	// command's exit and its result (hostScratch.remove), where
	// os.File's directory reading cost a fresh 8 KiB buffer (new pages,
	// each a fault) and a round through the runtime's poller.
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	var buf [1024]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, &fs.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n <= 0 {
			return true, nil
		}
		// ParseDirent leaves out "." and "..".
		if _, _, names := unix.ParseDirent(buf[:n], 1, nil); len(names) > 0 {
			return false, nil
		}
	}
}

// matchOwner gives the directory upper the owner, group and mode of ws,
// through a descriptor opened without following a symlink.
func matchOwner(upper, ws string) error {
	var w unix.Stat_t
	if err := unix.Stat(ws, &w); err != nil {
		return err
	}
	fd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var u unix.Stat_t
	if err := unix.Fstat(fd, &u); err != nil {
		return err
	}
	if u.Uid != w.Uid || u.Gid != w.Gid {
		if err := unix.Fchown(fd, int(w.Uid), int(w.Gid)); err != nil {
			return fmt.Errorf("chown to %d:%d: %w", w.Uid, w.Gid, err)
		}
	}
	return unix.Fchmod(fd, w.Mode&0o7777)
}

// overlayEnforced records an overlay-mode run's mount.
func overlayEnforced(e *sandbox.Enforced, a *launch.Applied, layers int) {
	e.Workspace = workspaceOverlay
	e.Overlay = &sandbox.OverlayMount{Options: a.Overlay, Layers: layers}
}
