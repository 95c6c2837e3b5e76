//go:build linux

// Command ironvise-guest is the init of IronVise's Firecracker guests
// (docs/design/sandbox.md#firecracker-tier). It reads the intent image —
// strictly: an image with a duplicate or unknown member, a member name in
// another case or invalid UTF-8 is refused (package guestproto) — runs
// params.command of a run_command intent as an unprivileged user with only
// the sandbox's allowlisted environment (package envallow), writes the framed
// result to the serial console and powers the VM off.
//
// # As PID 1
//
// Booted as /init (init=/init), it mounts /proc, /sys, /dev and a /tmp
// tmpfs, reads /dev/vdb, writes to /dev/ttyS0, reaps every orphan, kills
// whatever the command left behind, and reboots (with reboot=k on the
// kernel command line Firecracker then exits). Flags work as below; when
// the kernel's arguments are not flags, the defaults apply.
//
// # Elsewhere
//
// Started as an ordinary process — by tests, or by a stand-in VMM — it does
// no mounting and no reboot, and takes flags:
//
//	ironvise-guest -intent intent.img -console out.txt [-workdir DIR] [-scratch DIR]
//
// # Limitations
//
// It is static Go without cgo and imports no database driver and no HTTP
// server (ARCHITECTURE.md), so the root filesystem needs nothing but it and
// a /bin/sh. The command runs as uid 65534 with no_new_privs when the guest
// runs as root. There is no workspace inside the VM: the command starts in
// the rootfs's empty, read-only /workspace, with HOME and TMPDIR on /tmp.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args))
}
