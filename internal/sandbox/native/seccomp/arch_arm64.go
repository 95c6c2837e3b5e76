//go:build linux && arm64

package seccomp

import "golang.org/x/sys/unix"

// auditArch is the AUDIT_ARCH_* value of the native ABI.
const auditArch = unix.AUDIT_ARCH_AARCH64

// rejectX32 is false: arm64 has no x32-style alternate numbering in the
// native AUDIT_ARCH (aarch32 compat syscalls carry AUDIT_ARCH_ARM).
const rejectX32 = false

// nativeNumber is a syscall's number on arm64.
func nativeNumber(n archNums) int64 { return n.arm64 }
