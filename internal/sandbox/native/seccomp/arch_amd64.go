//go:build linux && amd64

package seccomp

import "golang.org/x/sys/unix"

// auditArch is the AUDIT_ARCH_* value of the native ABI.
const auditArch = unix.AUDIT_ARCH_X86_64

// rejectX32 kills x32 syscalls, which share the x86_64 AUDIT_ARCH value.
const rejectX32 = true

// nativeNumber is a syscall's number on amd64.
func nativeNumber(n archNums) int64 { return n.amd64 }
