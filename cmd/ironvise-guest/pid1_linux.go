package main

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// setupPID1 mounts what the guest needs on a read-only root: /dev for the
// devices, /proc and /sys for the command's tools, a small /tmp tmpfs as
// the command's only writable place.
func setupPID1() error {
	mounts := []struct {
		source, target, fstype string
		flags                  uintptr
		data                   string
		required               bool
	}{
		{"devtmpfs", "/dev", "devtmpfs", unix.MS_NOSUID | unix.MS_NOEXEC, "mode=0755", true},
		{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, "", false},
		{"sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RDONLY, "", false},
		{"tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, "mode=1777,size=64m", true},
	}
	for _, m := range mounts {
		err := unix.Mount(m.source, m.target, m.fstype, m.flags, m.data)
		// The kernel may have mounted devtmpfs itself
		// (CONFIG_DEVTMPFS_MOUNT).
		if errors.Is(err, unix.EBUSY) {
			err = nil
		}
		if err != nil && m.required {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.target, err)
		}
	}
	return nil
}

// openConsole opens where the result goes: the serial port, or, as PID 1,
// the kernel console when the port is missing.
func openConsole(cfg config) (*os.File, error) {
	f, err := os.OpenFile(cfg.console, os.O_WRONLY|unix.O_NOCTTY, 0)
	if err == nil || !cfg.pid1 {
		if err != nil {
			return nil, fmt.Errorf("open the console %s: %w", cfg.console, err)
		}
		return f, nil
	}
	if f, err2 := os.OpenFile("/dev/console", os.O_WRONLY|unix.O_NOCTTY, 0); err2 == nil {
		return f, nil
	}
	return nil, fmt.Errorf("open the console %s: %w", cfg.console, err)
}

// drain waits until a terminal has sent everything written to it
// (tcdrain): a reboot right after a write would otherwise lose the end of
// the frame. Files that are not terminals need nothing.
func drain(f *os.File) {
	_ = unix.IoctlSetInt(int(f.Fd()), unix.TCSBRK, 1)
	_ = f.Sync()
}

// powerOff ends the VM: with reboot=k on the kernel command line,
// Firecracker exits when its guest reboots. If that fails, init returns and
// the kernel panics, which ends the VM too (panic=1).
func powerOff() {
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
}
