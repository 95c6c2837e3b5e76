//go:build linux

package launch

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
)

// setupMounts builds the command's mount view inside its new mount
// namespace. It runs while the launcher still has CAP_SYS_ADMIN over the
// namespace. In overlay mode the workspace's mount of its own is the
// overlayfs (mountOverlay), made next, not a bind mount.
func setupMounts(slave func() error, workspace, scratch string, overlay bool) error {
	// Security: without this, the mounts below would propagate to the
	// host's mount namespace through shared peer groups (slave is
	// makeSlave, or what it returned when the launcher prepared its
	// namespaces).
	if err := slave(); err != nil {
		return fmt.Errorf("make / a slave mount: %w", err)
	}
	// The workspace too, so that it alone can be made noexec.
	if ownWorkspaceMount(workspace, scratch) && !overlay {
		if err := kernel.Mount(workspace, workspace, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind workspace %s: %w", workspace, err)
		}
	}
	for _, p := range FixedMasks() {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue // absent, or a symlink the mount would follow
		}
		if fi.IsDir() {
			err = kernel.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0555")
		} else {
			err = kernel.Mount("/dev/null", p, "", unix.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("mask %s: %w", p, err)
		}
	}
	return nil
}

// makeSlave makes every mount of the launcher's namespace a slave of the
// host's: host mounts still propagate in, none made here propagate out.
func makeSlave() error {
	return kernel.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, "")
}

// mountProc mounts a /proc of the command's own PID namespace: ps shows the
// command's processes only, and no other process's command line or status.
func mountProc() error {
	if err := kernel.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// mountScratch mounts the scratch directory as a tmpfs of the command's
// own, capped in bytes and inodes and owned by the command's user.
//
// Security: a directory on the host's disk had no total cap (only
// RLIMIT_FSIZE per file), and a non-root command could leave behind what
// IronVise then failed to remove (a chmod 000 folder). A tmpfs in the
// command's mount namespace is bounded by its size and inode options and
// vanishes with the namespace, whatever the command did to its contents;
// the host directory stays an empty mount point. If the tmpfs cannot be
// mounted the launch fails: there is no fallback to the host directory.
func (l *launcher) mountScratch() error {
	s := &l.spec
	uid, gid := os.Getuid(), os.Getgid()
	if s.SwitchUser {
		uid, gid = s.UID, s.GID
	}
	inodes := s.ScratchMiB * ScratchInodesPerMiB
	opts := "size=" + strconv.Itoa(s.ScratchMiB) + "m,nr_inodes=" + strconv.Itoa(inodes) +
		",mode=0700,uid=" + strconv.Itoa(uid) + ",gid=" + strconv.Itoa(gid)
	err := l.call(StepScratch, func() error {
		return kernel.Mount("tmpfs", s.Scratch, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts)
	})
	if err != nil {
		return stepErr(StepScratch, fmt.Errorf("mount a %d MiB tmpfs on the scratch directory %s: %w", s.ScratchMiB, s.Scratch, err),
			"run IronVise as root or allow unprivileged user namespaces; lower ECTO_SANDBOX_SCRATCH_MIB if the kernel refused the size")
	}
	// One tmpfs, two views that share its caps: the command's scratch
	// directory, and /dev/shm (POSIX shared memory and semaphores, which
	// Python's multiprocessing and many test runners need). The host's
	// /dev/shm, shared with every other process, stays out of reach.
	tmp, shm := s.Scratch+"/tmp", s.Scratch+"/shm"
	err = os.Mkdir(tmp, 0o700)
	if err == nil {
		err = os.Chown(tmp, uid, gid)
	}
	if err != nil {
		return stepErr(StepScratch, fmt.Errorf("prepare the scratch tmpfs: %w", err), "")
	}
	if fi, serr := os.Stat(devShm); serr == nil && fi.IsDir() {
		err = os.Mkdir(shm, 0o1777)
		if err == nil {
			err = os.Chmod(shm, 0o1777) // the umask narrowed the mode
		}
		if err == nil {
			err = kernel.Mount(shm, devShm, "", unix.MS_BIND, "")
		}
		if err != nil {
			return stepErr(StepScratch, fmt.Errorf("mount the scratch tmpfs on %s: %w", devShm, err), "")
		}
		l.shm = true
	}
	if err := kernel.Mount(tmp, s.Scratch, "", unix.MS_BIND, ""); err != nil {
		return stepErr(StepScratch, fmt.Errorf("bind the scratch tmpfs on %s: %w", s.Scratch, err), "")
	}
	l.applied.ScratchMiB, l.applied.ScratchInodes = s.ScratchMiB, inodes
	return nil
}

// devShm is where POSIX shared memory lives.
const devShm = "/dev/shm"

// hide covers every path of Spec.Hide that exists: a directory with an
// empty read-only tmpfs, anything else with /dev/null (which the read-only
// remount makes unwritable too).
//
// Security: Landlock grants the workspace and the system roots as whole
// trees, so a workspace such as a home directory would otherwise show its
// ~/.ssh and IronVise's own data directory (the issuer's signing key, the
// ledger). Masking in the mount namespace hides them from every way of
// naming them: a tripwire rule only sees the paths it can parse, while a
// command can build a path at run time. A path that vanished under an
// earlier mask (a child of a masked directory) needs nothing more.
func (l *launcher) hide() error {
	scan := newMaskScan(os.Lstat, len(l.spec.Hide))
	for _, p := range l.spec.Hide {
		fi, ok := scan.find(p)
		if !ok {
			continue // absent, or under a directory masked already
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			// A mount would follow the link; the tier passes the link's
			// target as its own entry.
			continue
		}
		err := l.call(StepHide, func() error {
			if !fi.IsDir() {
				return kernel.Mount("/dev/null", p, "", unix.MS_BIND, "")
			}
			if err := kernel.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,nr_inodes=1,mode=0555"); err != nil {
				return err
			}
			scan.masked(p)
			return nil
		})
		if err != nil {
			return stepErr(StepHide, fmt.Errorf("mask %s: %w", p, err), "")
		}
		l.applied.Hidden++
	}
	return nil
}

// readOnlyRoot makes every mount read-only and nosuid, then the scratch
// directory writable again.
//
// Security: Landlock does not govern chmod, chown, utimes or extended
// attributes; a command running as the owner of a host file (uid 0 owns
// most of them) could otherwise change its mode through any path it can
// reach. A read-only mount refuses those with EROFS. nosuid backs up
// no_new_privs against setuid binaries.
//
// Security: the workspace and the scratch directory are also noexec.
// Landlock's execute right covers execve only; the dynamic loader
// (ld.so ./binary) maps a file executable without it, which a noexec mount
// refuses. So nothing the command writes can run as native code.
//
// In overlay mode the workspace's overlayfs alone is made writable again
// (not recursively: a mask inside the workspace stays read-only), and stays
// noexec like the scratch directory.
func readOnlyRoot(workspace, scratch string, shm, overlay bool) error {
	if err := kernel.MountSetattr("/", true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID, 0); err != nil {
		return fmt.Errorf("mount_setattr / read-only: %w", err)
	}
	if ownWorkspaceMount(workspace, scratch) {
		if err := kernel.MountSetattr(workspace, true, unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_NODEV, 0); err != nil {
			return fmt.Errorf("mount_setattr %s noexec: %w", workspace, err)
		}
	}
	if overlay {
		if err := kernel.MountSetattr(workspace, false, unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOSUID, unix.MOUNT_ATTR_RDONLY); err != nil {
			return fmt.Errorf("mount_setattr the workspace's overlay %s read-write noexec: %w", workspace, err)
		}
	}
	if shm {
		if err := kernel.MountSetattr(devShm, false, unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_NODEV, unix.MOUNT_ATTR_RDONLY); err != nil {
			return fmt.Errorf("mount_setattr %s read-write noexec: %w", devShm, err)
		}
	}
	if err := kernel.MountSetattr(scratch, false, unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_NODEV, unix.MOUNT_ATTR_RDONLY); err != nil {
		return fmt.Errorf("mount_setattr %s read-write noexec: %w", scratch, err)
	}
	return nil
}

// ownWorkspaceMount reports whether the workspace gets a bind mount of its
// own: not when it is / or contains the scratch directory (the scratch
// mount must stay on top).
func ownWorkspaceMount(workspace, scratch string) bool {
	return workspace != "/" && !strings.HasPrefix(scratch+"/", strings.TrimSuffix(workspace, "/")+"/")
}
