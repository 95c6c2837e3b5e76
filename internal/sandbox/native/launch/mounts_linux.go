//go:build linux

package launch

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
)

// maskedFiles are secrets readable under /etc by their owner. Landlock can
// only grant /etc as a whole, and a command running as uid 0 without
// capabilities still owns these files, so they are covered with /dev/null
// (files) or an empty read-only tmpfs (directories) in the command's mount
// namespace.
var maskedFiles = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/security/opasswd",
	"/etc/ssl/private", "/etc/krb5.keytab",
}

// hostKeys are the files whose names vary that are masked too: the SSH
// host private keys, /etc/ssh/ssh_host_*_key. (Matched by hand rather than
// with path/filepath.Glob: importing path/filepath would make Go initialise
// many unrelated packages of the ironvise binary before the launcher; see
// package early.)
func hostKeys() []string {
	const dir, prefix, suffix = "/etc/ssh", "ssh_host_", "_key"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // no /etc/ssh: nothing to mask
	}
	var keys []string
	for _, e := range ents {
		n := e.Name()
		if len(n) >= len(prefix)+len(suffix) && strings.HasPrefix(n, prefix) && strings.HasSuffix(n, suffix) {
			keys = append(keys, dir+"/"+n)
		}
	}
	return keys
}

// setupMounts builds the command's mount view inside its new mount
// namespace. It runs while the launcher still has CAP_SYS_ADMIN over the
// namespace.
func setupMounts(workspace, scratch string) error {
	// Security: without this, the mounts below would propagate to the
	// host's mount namespace through shared peer groups.
	if err := kernel.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / a slave mount: %w", err)
	}
	// The scratch directory becomes a mount of its own so that it alone
	// can stay writable when everything else turns read-only.
	if err := kernel.Mount(scratch, scratch, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind scratch %s: %w", scratch, err)
	}
	// The workspace too, so that it alone can be made noexec.
	if ownWorkspaceMount(workspace, scratch) {
		if err := kernel.Mount(workspace, workspace, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind workspace %s: %w", workspace, err)
		}
	}
	paths := append(append([]string(nil), maskedFiles...), hostKeys()...)
	for _, p := range paths {
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
	// A /proc of the command's own PID namespace: ps shows the command's
	// processes only, and no other process's command line or status.
	if err := kernel.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
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
func readOnlyRoot(workspace, scratch string) error {
	if err := kernel.MountSetattr("/", true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID, 0); err != nil {
		return fmt.Errorf("mount_setattr / read-only: %w", err)
	}
	if ownWorkspaceMount(workspace, scratch) {
		if err := kernel.MountSetattr(workspace, true, unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_NODEV, 0); err != nil {
			return fmt.Errorf("mount_setattr %s noexec: %w", workspace, err)
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
