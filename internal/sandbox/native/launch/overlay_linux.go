//go:build linux

package launch

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
)

// OverlayOptions are the overlayfs options of every overlay-mode mount,
// besides the directories, as recorded in Applied.Overlay.
//
// redirect_dir=nofollow and metacopy=off keep each layer plain files,
// directories and whiteouts: with redirect_dir on, renaming a directory of a lower
// layer records an xattr pointing at the old path in that layer, and with
// metacopy on, a chmod copies up the metadata alone with an xattr pointing
// at the lower file's data. Either makes a layer meaningless without the
// layers below it, as they were then, and a layer must be readable (and
// applicable to the real workspace) on its own. nofollow, rather than off,
// also ignores any redirect found in a layer (off follows them where the
// kernel was built to, and userxattr refuses that). With redirects off,
// rename(2) of a lower directory fails with EXDEV, and mv, like every tool
// that handles a rename across file systems, copies and deletes instead.
//
// index=off: the index records file handles of the lower layers, which
// ties an upper layer to the exact lower directories it was mounted over;
// a layer stacked under a later command's mount would then be refused as
// stale. (Hard links to a lower file are copied up as separate files, which
// is what a layer of plain files can hold anyway.) xino=off keeps inode
// numbers from borrowing high bits the layers' file system might use.
//
// userxattr, as root too: overlayfs keeps its opaque-directory marks (and
// any other of its own) in user.overlay.* extended attributes rather than
// trusted.overlay.*. In a user namespace it has no other choice; using it
// everywhere gives one layer format on every host, whether IronVise runs
// as root or not, and, since overlayfs refuses its own attributes to the
// command through the mount, a command cannot plant one in its layer that
// a stack of the other kind would read as a mark. Whiteouts are 0/0
// character devices either way.
const OverlayOptions = "redirect_dir=nofollow,metacopy=off,index=off,xino=off,userxattr"

// overlayXattr is the prefix of overlayfs's own extended attributes with
// userxattr.
const overlayXattr = "user.overlay."

// overlaySuperMagic is OVERLAYFS_SUPER_MAGIC (linux/magic.h).
const overlaySuperMagic = 0x794c7630

// mountOverlay mounts the workspace's overlayfs in the command's mount
// namespace: lowerdir the earlier layers, newest first, then the real
// workspace; upperdir and workdir the command's. The mount covers the
// workspace path, so that every way of naming the workspace reaches the
// overlay; the real directory stays reachable to overlayfs alone, through
// the path it resolved at mount time.
//
// Security: fail closed. A mount the kernel refuses, or one it made
// read-only (overlayfs does so when it cannot use the work directory), or
// an upper directory whose file system cannot hold overlayfs's extended
// attributes (a deleted directory recreated by the command would then show
// the lower layer's contents again) stops the launch: the command never
// runs on the real workspace, nor on a half-working overlay.
func (l *launcher) mountOverlay() error {
	s, o := &l.spec, l.spec.Overlay
	opts := OverlayOptions
	fix := "check that the upper and work directories exist, are empty, lie on one file system that supports extended attributes (ext4, xfs, btrfs; tmpfs on Linux 6.6 or newer), and are not inside the workspace or a layer; overlayfs needs Linux 5.11 or newer in a user namespace (or run IronVise as root); or unset ECTO_SANDBOX_WORKSPACE to run with a read-only workspace"
	// A probe of the xattr namespace overlayfs will use, on the work
	// directory (the same file system as the upper one).
	probe := overlayXattr + "ironvise-probe"
	err := unix.Setxattr(o.Work, probe, []byte("y"), 0)
	if err == nil {
		err = unix.Removexattr(o.Work, probe)
	}
	if err != nil {
		return stepErr(StepOverlay, fmt.Errorf("the file system of the work directory %s cannot hold overlayfs's %s* extended attributes: %w", o.Work, overlayXattr, err), fix)
	}
	lower := append(append([]string(nil), o.Layers...), s.Workspace)
	data := "lowerdir=" + strings.Join(lower, ":") + ",upperdir=" + o.Upper + ",workdir=" + o.Work + "," + opts
	err = l.call(StepOverlay, func() error {
		return kernel.Mount("overlay", s.Workspace, "overlay", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, data)
	})
	if err != nil {
		msg := fmt.Errorf("mount an overlayfs on the workspace %s (upper %s, work %s, %d earlier layers): %w", s.Workspace, o.Upper, o.Work, len(o.Layers), err)
		if errors.Is(err, unix.ENODEV) {
			msg = fmt.Errorf("this kernel has no overlayfs (CONFIG_OVERLAY_FS): %w", err)
		}
		return stepErr(StepOverlay, msg, fix)
	}
	var st unix.Statfs_t
	err = l.call(StepOverlay, func() error { return unix.Statfs(s.Workspace, &st) })
	if err == nil && (st.Type != overlaySuperMagic || st.Flags&unix.ST_RDONLY != 0) {
		err = fmt.Errorf("the mount is not a writable overlayfs (type %#x, flags %#x): overlayfs could not use the work directory", st.Type, st.Flags)
	}
	if err != nil {
		return stepErr(StepOverlay, fmt.Errorf("check the workspace's overlayfs: %w", err), fix)
	}
	l.applied.Overlay = opts
	return nil
}

// maskOverlayDirs covers the upper, work and layer directories with an
// empty read-only tmpfs in the command's mount namespace.
//
// Security: overlayfs keeps the paths it resolved at mount time, so the
// covers change nothing for the workspace's overlay; but the command can
// no longer reach its layer or the earlier ones by name, wherever the
// caller put them (under IronVise's data directory they are masked with it
// too, and Landlock grants neither). Everything the command changes goes
// through the workspace.
func (l *launcher) maskOverlayDirs() error {
	o := l.spec.Overlay
	for _, p := range append([]string{o.Upper, o.Work}, o.Layers...) {
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue // under a directory masked already
		}
		err = l.call(StepOverlay, func() error {
			return kernel.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,nr_inodes=1,mode=0555")
		})
		if err != nil {
			return stepErr(StepOverlay, fmt.Errorf("mask the overlay directory %s: %w", p, err), "")
		}
	}
	return nil
}

// verifyOverlay confirms, before exec, that the command's workspace is
// the writable overlayfs and not the real directory.
func (l *launcher) verifyOverlay() error {
	var st unix.Statfs_t
	err := l.call(StepVerify, func() error { return unix.Statfs(l.spec.Workspace, &st) })
	if err == nil && (st.Type != overlaySuperMagic || st.Flags&unix.ST_RDONLY != 0) {
		err = fmt.Errorf("the workspace %s is not a writable overlayfs (type %#x, flags %#x)", l.spec.Workspace, st.Type, st.Flags)
	}
	return err
}
