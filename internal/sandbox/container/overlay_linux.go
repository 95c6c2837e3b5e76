//go:build linux

package container

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// maxMountData is the size of mount(2)'s option page, NUL included.
const maxMountData = 4096

// overlayMount is the host side of one overlay-mode run (see overlay.go):
// the idmapped layers and the merged view, each mounted on an empty
// directory below dir, which only root can traverse.
type overlayMount struct {
	// Merged is the overlay's merged view: the container's /workspace.
	Merged string
	dir    string
	// mounted are the mount points made so far, in mounting order;
	// Unmount undoes them in reverse.
	mounted []string
	// made are the directories created below dir, removed (one by one,
	// never recursively) once nothing is mounted on them.
	made []string
}

// mountOverlay mounts ov for workspace ws (absolute, symlinks resolved,
// checked by checkOverlay) below a new directory in parent. The caller must
// call Unmount, whatever happens after; on error everything done so far is
// already undone.
func mountOverlay(parent, ws string, ov *sandbox.Overlay) (m *overlayMount, err error) {
	fi, err := os.Stat(ws)
	if err != nil {
		return nil, fmt.Errorf("overlay mode: workspace %s: %w", ws, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("overlay mode: workspace %s: no owner information", ws)
	}
	if st.Uid == 0 {
		return nil, fmt.Errorf("overlay mode: the workspace %s belongs to root: the command's files would be root's on the host; fix: chown the workspace to the unprivileged user who owns the project, or use the native tier", ws)
	}
	// Security: every id but root and the owner's stays unmapped, so the
	// command can change no file of anyone else's through the overlay.
	uidMap := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: int(st.Uid), HostID: commandUID, Size: 1}}
	gidMap := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: commandGID, HostID: commandGID, Size: 1}}
	if st.Gid != 0 && st.Gid != commandGID {
		gidMap[1].ContainerID = int(st.Gid)
	}

	dir, err := os.MkdirTemp(parent, "ironvise-overlay-")
	if err != nil {
		return nil, fmt.Errorf("overlay mode: create the mount directory: %w; fix: make the temporary directory (TMPDIR) writable", err)
	}
	m = &overlayMount{dir: dir}
	defer func() {
		if err != nil {
			if uerr := m.Unmount(); uerr != nil {
				err = errors.Join(err, uerr)
			}
			m = nil
		}
	}()
	// The directory becomes a private mount of its own, so the mounts
	// below it (an idmapped, writable view of the workspace among them)
	// do not propagate into the host's other mount namespaces, the
	// native tier's sandboxes included.
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return m, fmt.Errorf("overlay mode: bind the mount directory %s: %w", dir, err)
	}
	m.mounted = append(m.mounted, dir)
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		return m, fmt.Errorf("overlay mode: make the mount directory %s private: %w", dir, err)
	}
	userns, err := idmapNamespace(uidMap, gidMap)
	if err != nil {
		return m, fmt.Errorf("overlay mode: %w", err)
	}
	defer userns.Close()

	// The upper directory's root is the merged view's root: the command
	// must see it as the workspace's root, its owner's and with its mode.
	if err := os.Chown(ov.Upper, int(st.Uid), int(st.Gid)); err != nil {
		return m, fmt.Errorf("overlay mode: give the upper directory %s the workspace's owner: %w", ov.Upper, err)
	}
	if err := os.Chmod(ov.Upper, fi.Mode().Perm()); err != nil {
		return m, fmt.Errorf("overlay mode: give the upper directory %s the workspace's mode: %w", ov.Upper, err)
	}

	// Lower layers, top first: the accepted layers newest first, then the
	// real workspace.
	var lower []string
	for i, src := range append(append([]string(nil), ov.Layers...), ws) {
		p, err := m.idmapped(src, "l"+strconv.Itoa(i), userns, unix.MOUNT_ATTR_RDONLY)
		if err != nil {
			return m, err
		}
		lower = append(lower, p)
	}
	up, err := m.idmapped(filepath.Dir(ov.Upper), "u", userns, 0)
	if err != nil {
		return m, err
	}
	merged, err := m.mkdir("merged")
	if err != nil {
		return m, err
	}
	// redirect_dir and metacopy off: every layer is plain files and
	// whiteouts (a renamed lower directory is copied, EXDEV for the
	// command's mv, which falls back to copying), so a layer can be read
	// and diffed without overlayfs. index off: layers are stacked in new
	// combinations from run to run.
	opts := "lowerdir=" + strings.Join(lower, ":") +
		",upperdir=" + filepath.Join(up, filepath.Base(ov.Upper)) +
		",workdir=" + filepath.Join(up, filepath.Base(ov.Work)) +
		",redirect_dir=off,metacopy=off,index=off,xino=off"
	if len(opts) >= maxMountData {
		return m, fmt.Errorf("overlay mode: the stack of %d layers does not fit in the overlay's mount options (%d bytes, at most %d); fix: apply or discard the session's accepted layers to shorten the stack, or set TMPDIR to a shorter path", len(lower), len(opts), maxMountData-1)
	}
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return m, fmt.Errorf("overlay mode: mount the overlay (%d layers): %w; fix: check that the kernel has overlayfs (modprobe overlay) and that the upper and work directories are on a filesystem that can hold an upper layer (not overlayfs, NFS or FAT), or use the native tier", len(lower), err)
	}
	m.mounted = append(m.mounted, merged)
	// Security: overlayfs falls back to a read-only mount when it cannot
	// use the work directory; a writable workspace is the contract.
	var sfs unix.Statfs_t
	if err := unix.Statfs(merged, &sfs); err != nil {
		return m, fmt.Errorf("overlay mode: examine the overlay: %w", err)
	}
	if sfs.Flags&unix.ST_RDONLY != 0 {
		return m, errors.New("overlay mode: the overlay was mounted read-only; fix: check the kernel log (dmesg) for overlayfs's reason, and that the work directory is empty and on the upper directory's filesystem")
	}
	m.Merged = merged
	return m, nil
}

// idmapped mounts a clone of src, idmapped by userns and with the extra
// attributes set, on a new directory name below m.dir, and returns its
// path. The lower layers are read-only clones: overlayfs never writes
// them, and nothing else may through IronVise's view.
func (m *overlayMount) idmapped(src, name string, userns *os.File, set uint64) (string, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return "", fmt.Errorf("overlay mode: clone the mount of %s: %w; fix: use Linux 5.12 or later, or the native tier", src, err)
	}
	defer unix.Close(fd)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | set, Userns_fd: uint64(userns.Fd())}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return "", fmt.Errorf("overlay mode: idmap the mount of %s: %w; fix: put the workspace and IronVise's data directory on a filesystem with idmapped mounts (ext4, xfs, btrfs, tmpfs on Linux 6.3+), or use the native tier", src, err)
	}
	target, err := m.mkdir(name)
	if err != nil {
		return "", err
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return "", fmt.Errorf("overlay mode: attach the idmapped mount of %s: %w", src, err)
	}
	m.mounted = append(m.mounted, target)
	return target, nil
}

// mkdir creates the directory name below m.dir, only root's.
func (m *overlayMount) mkdir(name string) (string, error) {
	p := filepath.Join(m.dir, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		return "", fmt.Errorf("overlay mode: create the mount point %s: %w", p, err)
	}
	m.made = append(m.made, p)
	return p, nil
}

// Unmount undoes every mount, newest first, and removes the directories.
// A busy mount is detached (the kernel frees it once its last user, a
// container not removed yet, is gone). It never removes recursively: a
// mount point still attached holds the real workspace. Safe to call more
// than once.
func (m *overlayMount) Unmount() error {
	if m == nil {
		return nil
	}
	var errs []error
	for i := len(m.mounted) - 1; i >= 0; i-- {
		p := m.mounted[i]
		if err := unix.Unmount(p, unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, unix.EINVAL) {
			if derr := unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); derr != nil && !errors.Is(derr, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", p, derr))
				continue
			}
		}
		m.mounted = m.mounted[:i]
	}
	if len(m.mounted) > 0 {
		return fmt.Errorf("overlay mode: %w; the mounts stay below %s (unmount them as root)", errors.Join(errs...), m.dir)
	}
	for i := len(m.made) - 1; i >= 0; i-- {
		if err := os.Remove(m.made[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	m.made = nil
	if err := os.Remove(m.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("overlay mode: remove the mount directory: %w", errors.Join(errs...))
	}
	return nil
}

// idmapNamespace returns a user namespace with the given maps, for
// MOUNT_ATTR_IDMAP. A multi-threaded process cannot unshare a user
// namespace, so a child is started in one (the maps are written before it
// runs), its namespace is opened, and it is ended: the open descriptor
// keeps the namespace.
func idmapNamespace(uidMap, gidMap []syscall.SysProcIDMap) (*os.File, error) {
	cmd := exec.Command("/bin/sh", "-c", "read _")
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: uidMap, GidMappings: gidMap,
		Pdeathsig: syscall.SIGKILL,
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("create the idmap's user namespace: %w", err)
	}
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return nil, fmt.Errorf("create the idmap's user namespace (start /bin/sh in it): %w; fix: run IronVise as root on a kernel with user namespaces", err)
	}
	ns, err := os.Open("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/user")
	stdin.Close()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("open the idmap's user namespace: %w", err)
	}
	return ns, nil
}
