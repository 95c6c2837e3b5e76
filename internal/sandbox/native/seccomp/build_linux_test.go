//go:build linux && (amd64 || arm64)

package seccomp

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// eval runs the filter on a seccomp_data the way the kernel does (classic
// BPF, little-endian loads) and returns the action. It supports exactly the
// instructions Build emits, and fails the test on anything else.
func eval(t *testing.T, p *Profile, arch, nr uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(p.Filter); pc++ {
		ins := bpf.RawInstruction{Op: p.Filter[pc].Code, Jt: p.Filter[pc].Jt, Jf: p.Filter[pc].Jf, K: p.Filter[pc].K}.Disassemble()
		switch i := ins.(type) {
		case bpf.LoadAbsolute:
			acc = binary.LittleEndian.Uint32(data[i.Off:])
		case bpf.JumpIf:
			var ok bool
			switch i.Cond {
			case bpf.JumpEqual:
				ok = acc == i.Val
			case bpf.JumpNotEqual:
				ok = acc != i.Val
			case bpf.JumpGreaterOrEqual:
				ok = acc >= i.Val
			case bpf.JumpLessThan:
				ok = acc < i.Val
			case bpf.JumpBitsSet:
				ok = acc&i.Val != 0
			case bpf.JumpBitsNotSet:
				ok = acc&i.Val == 0
			default:
				t.Fatalf("unexpected jump %v", i)
			}
			if ok {
				pc += int(i.SkipTrue)
			} else {
				pc += int(i.SkipFalse)
			}
		case bpf.RetConstant:
			return i.Val
		default:
			t.Fatalf("unexpected instruction %#v", ins)
		}
	}
	t.Fatal("the filter fell off its end")
	return 0
}

const (
	allow  = unix.SECCOMP_RET_ALLOW
	kill   = unix.SECCOMP_RET_KILL_PROCESS
	eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

func TestFilterDecisions(t *testing.T) {
	p, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	n := func(name string) uint32 {
		v, ok := SyscallNumber(name)
		if extra, found := unlisted[name]; found {
			v, ok = extra, true
		}
		if !ok {
			t.Fatalf("no number for %s", name)
		}
		return v
	}
	cases := []struct {
		name string
		arch uint32
		nr   uint32
		args []uint64
		want uint32
	}{
		{"read allowed", auditArch, n("read"), nil, allow},
		{"execve allowed", auditArch, n("execve"), nil, allow},
		{"foreign architecture killed", unix.AUDIT_ARCH_I386, n("read"), nil, kill},
		{"socket denied for AF_INET", auditArch, n("socket"), []uint64{unix.AF_INET}, eperm},
		{"socket denied for AF_UNIX too", auditArch, n("socket"), []uint64{unix.AF_UNIX}, eperm},
		{"socketpair AF_UNIX allowed", auditArch, n("socketpair"), []uint64{unix.AF_UNIX}, allow},
		{"socketpair AF_INET denied", auditArch, n("socketpair"), []uint64{unix.AF_INET}, eperm},
		{"clone for fork allowed", auditArch, n("clone"), []uint64{uint64(unix.SIGCHLD)}, allow},
		{"clone for a thread allowed", auditArch, n("clone"), []uint64{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD}, allow},
		{"clone NEWUSER denied", auditArch, n("clone"), []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
		{"clone NEWNET denied", auditArch, n("clone"), []uint64{unix.CLONE_NEWNET}, eperm},
		{"clone NEWNS denied", auditArch, n("clone"), []uint64{unix.CLONE_NEWNS}, eperm},
		{"clone3 ENOSYS", auditArch, n("clone3"), nil, enosys},
		{"ioctl TCGETS allowed", auditArch, n("ioctl"), []uint64{0, unix.TCGETS}, allow},
		{"ioctl TIOCSTI denied", auditArch, n("ioctl"), []uint64{0, unix.TIOCSTI}, eperm},
		{"ioctl TIOCSTI with high bits denied", auditArch, n("ioctl"), []uint64{0, 0xffffffff00000000 | unix.TIOCSTI}, eperm},
		{"ioctl TIOCLINUX denied", auditArch, n("ioctl"), []uint64{0, unix.TIOCLINUX}, eperm},
		{"prlimit64 on self allowed", auditArch, n("prlimit64"), []uint64{0}, allow},
		{"prlimit64 on another pid denied", auditArch, n("prlimit64"), []uint64{1}, eperm},
		{"unknown syscall EPERM", auditArch, 999, nil, eperm},
		{"memfd_create EPERM", auditArch, n("memfd_create"), nil, eperm},
	}
	for _, a := range AlwaysDenied() {
		if v, ok := SyscallNumber(a); ok && a != "clone3" {
			cases = append(cases, struct {
				name string
				arch uint32
				nr   uint32
				args []uint64
				want uint32
			}{a + " always denied", auditArch, v, nil, eperm})
		}
	}
	if rejectX32 {
		cases = append(cases, struct {
			name string
			arch uint32
			nr   uint32
			args []uint64
			want uint32
		}{"x32 getpid killed", auditArch, x32SyscallBit | n("getpid"), nil, kill})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, p, tc.arch, tc.nr, tc.args...); got != tc.want {
				t.Fatalf("got %#x; want %#x", got, tc.want)
			}
		})
	}
}

func TestPolicyInvariants(t *testing.T) {
	for _, a := range AlwaysDenied() {
		if slices.Contains(Allowed(), a) || slices.Contains(ArgChecked(), a) {
			t.Errorf("%s is both always denied and allowed", a)
		}
	}
	for _, must := range []string{"ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
		"io_uring_register", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "mount", "umount2",
		"pivot_root", "fsopen", "fsmount", "move_mount", "open_tree", "unshare", "setns", "kexec_load", "kexec_file_load",
		"init_module", "finit_module", "delete_module", "open_by_handle_at", "clone3"} {
		if !slices.Contains(AlwaysDenied(), must) {
			t.Errorf("%s is not always denied (sandbox.md §3)", must)
		}
	}
	for _, never := range []string{"socket", "memfd_create", "connect", "bind", "listen", "accept", "setuid", "setns", "capset"} {
		if slices.Contains(Allowed(), never) {
			t.Errorf("%s is on the allowlist", never)
		}
	}
	for _, name := range append(Allowed(), ArgChecked()...) {
		if _, ok := SyscallNumber(name); !ok && !legacyOnly[name] {
			t.Errorf("%s has no number on this architecture", name)
		}
	}
}

// legacyOnly are the syscalls arm64 never had.
var legacyOnly = map[string]bool{"access": true, "alarm": true, "arch_prctl": true, "chmod": true, "chown": true, "creat": true,
	"dup2": true, "epoll_create": true, "epoll_wait": true, "eventfd": true, "fork": true, "futimesat": true, "getdents": true,
	"getpgrp": true, "inotify_init": true, "lchown": true, "link": true, "lstat": true, "mkdir": true, "mknod": true, "open": true,
	"pause": true, "pipe": true, "poll": true, "readlink": true, "rename": true, "rmdir": true, "select": true, "signalfd": true,
	"stat": true, "symlink": true, "time": true, "unlink": true, "utime": true, "utimes": true, "vfork": true}

func TestProfileHashIsStable(t *testing.T) {
	a, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Build()
	if a.SHA256 != b.SHA256 || len(a.SHA256) != 64 {
		t.Fatalf("hash %q vs %q", a.SHA256, b.SHA256)
	}
	if len(a.Filter) > maxInstructions {
		t.Fatalf("%d instructions", len(a.Filter))
	}
}

// unlisted are syscalls on no list, so absent from sysnums.
var unlisted = map[string]uint32{"socket": unix.SYS_SOCKET, "memfd_create": unix.SYS_MEMFD_CREATE}

func TestBytesRoundTrip(t *testing.T) {
	p, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	q, err := FromBytes(p.Bytes())
	if err != nil || q.SHA256 != p.SHA256 || !slices.Equal(q.Filter, p.Filter) {
		t.Fatalf("round trip: %v", err)
	}
	for _, bad := range [][]byte{nil, {1, 2, 3}, make([]byte, 8*(maxInstructions+1))} {
		if _, err := FromBytes(bad); err == nil {
			t.Errorf("FromBytes(%d bytes) accepted", len(bad))
		}
	}
}
