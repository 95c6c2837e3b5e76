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
	v, _ := run(t, p, arch, nr, args...)
	return v
}

// run is eval that also counts the instructions executed.
func run(t *testing.T, p *Profile, arch, nr uint32, args ...uint64) (action uint32, steps int) {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(p.Filter); pc++ {
		steps++
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
		case bpf.Jump:
			pc += int(i.Skip)
		case bpf.ALUOpConstant:
			if i.Op != bpf.ALUOpAnd {
				t.Fatalf("unexpected ALU operation %v", i)
			}
			acc &= i.Val
		case bpf.RetConstant:
			return i.Val, steps
		default:
			t.Fatalf("unexpected instruction %#v", ins)
		}
	}
	t.Fatal("the filter fell off its end")
	return 0, steps
}

const (
	allow  = unix.SECCOMP_RET_ALLOW
	kill   = unix.SECCOMP_RET_KILL_PROCESS
	eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// mustNumber is name's syscall number on this architecture.
func mustNumber(t *testing.T, name string) uint32 {
	t.Helper()
	v, ok := SyscallNumber(name)
	if !ok {
		t.Fatalf("no number for %s", name)
	}
	return v
}

// decisionCase is a syscall and what the filter must answer.
type decisionCase struct {
	name string
	arch uint32
	nr   uint32
	args []uint64
	want uint32
}

func TestFilterDecisions(t *testing.T) {
	p, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	n := func(name string) uint32 { return mustNumber(t, name) }
	cases := []decisionCase{
		{"read allowed", auditArch, n("read"), nil, allow},
		{"execve allowed", auditArch, n("execve"), nil, allow},
		{"foreign architecture killed", unix.AUDIT_ARCH_I386, n("read"), nil, kill},
		{"socket denied for AF_INET", auditArch, n("socket"), []uint64{unix.AF_INET}, eperm},
		{"socket denied for AF_UNIX too", auditArch, n("socket"), []uint64{unix.AF_UNIX}, eperm},
		{"socketpair AF_UNIX stream allowed", auditArch, n("socketpair"), []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, allow},
		{"socketpair AF_UNIX datagram denied", auditArch, n("socketpair"), []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, eperm},
		{"socketpair AF_INET denied", auditArch, n("socketpair"), []uint64{unix.AF_INET, unix.SOCK_STREAM}, eperm},
		{"setresuid allowed", auditArch, n("setresuid"), []uint64{0xffffffff, 0, 0xffffffff}, allow},
		{"capset denied", auditArch, n("capset"), nil, eperm},
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
			cases = append(cases, decisionCase{a + " always denied", auditArch, v, nil, eperm})
		}
	}
	if rejectX32 {
		cases = append(cases, decisionCase{"x32 getpid killed", auditArch, x32SyscallBit | n("getpid"), nil, kill})
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
			t.Errorf("%s is not always denied (docs/reference/sandboxing.md)", must)
		}
	}
	for _, never := range []string{"socket", "memfd_create", "connect", "bind", "listen", "accept", "accept4", "setns", "capset"} {
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

// TestSearchTreeMatchesLists evaluates every syscall number (and numbers
// beyond the last) through both profiles and compares the decision with the
// lists themselves: the binary search must not lose, shadow or invent a
// rule.
func TestSearchTreeMatchesLists(t *testing.T) {
	const pid = 4242
	profiles := []struct {
		name       string
		build      func() (*Profile, error)
		allowed    []string
		argChecked []string
	}{
		{"command", Build, Allowed(), ArgChecked()},
		{"https client", func() (*Profile, error) { return BuildHTTPSClient(pid) }, HTTPSClientAllowed(), HTTPSClientArgChecked()},
	}
	byNumber := map[uint32]string{}
	maxNr := uint32(0)
	for name, nr := range nativeSysnums(t) {
		byNumber[nr] = name
		maxNr = max(maxNr, nr)
	}
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			p, err := pr.build()
			if err != nil {
				t.Fatal(err)
			}
			for nr := uint32(0); nr <= maxNr+64; nr++ {
				name := byNumber[nr]
				if slices.Contains(pr.argChecked, name) {
					continue
				}
				want := eperm
				switch {
				case name == "clone3":
					want = enosys
				case slices.Contains(pr.allowed, name):
					want = allow
				}
				if got := eval(t, p, auditArch, nr); got != want {
					t.Errorf("syscall %d (%q): got %#x; want %#x", nr, name, got, want)
				}
			}
			for _, nr := range []uint32{maxNr + 1000, 1 << 20, x32SyscallBit - 1} {
				if got := eval(t, p, auditArch, nr); got != eperm {
					t.Errorf("syscall %d: got %#x; want EPERM", nr, got)
				}
			}
			high := uint32(0xffffffff)
			want := eperm
			if rejectX32 {
				want = kill
			}
			if got := eval(t, p, auditArch, high); got != want {
				t.Errorf("syscall %#x: got %#x; want %#x", high, got, want)
			}
		})
	}
}

func TestHTTPSClientDecisions(t *testing.T) {
	const pid = 4242
	p, err := BuildHTTPSClient(pid)
	if err != nil {
		t.Fatal(err)
	}
	n := func(name string) uint32 { return mustNumber(t, name) }
	thread := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD)
	cases := []struct {
		name string
		nr   uint32
		args []uint64
		want uint32
	}{
		{"read allowed", n("read"), nil, allow},
		{"connect allowed", n("connect"), nil, allow},
		{"execve denied", n("execve"), nil, eperm},
		{"execveat denied", n("execveat"), nil, eperm},
		{"ptrace denied", n("ptrace"), nil, eperm},
		{"process_vm_readv denied", n("process_vm_readv"), nil, eperm},
		{"mount denied", n("mount"), nil, eperm},
		{"unshare denied", n("unshare"), nil, eperm},
		{"bpf denied", n("bpf"), nil, eperm},
		{"io_uring_setup denied", n("io_uring_setup"), nil, eperm},
		{"bind denied", n("bind"), nil, eperm},
		{"listen denied", n("listen"), nil, eperm},
		{"accept4 denied", n("accept4"), nil, eperm},
		{"memfd_create denied", n("memfd_create"), nil, eperm},
		{"ioctl denied", n("ioctl"), []uint64{0, unix.TCGETS}, eperm},
		{"clone3 ENOSYS", n("clone3"), nil, enosys},
		{"clone for a thread allowed", n("clone"), []uint64{thread}, allow},
		{"clone for a process denied", n("clone"), []uint64{uint64(unix.SIGCHLD)}, eperm},
		{"clone vfork denied", n("clone"), []uint64{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)}, eperm},
		{"clone thread with NEWUSER denied", n("clone"), []uint64{thread | unix.CLONE_NEWUSER}, eperm},
		{"socket tcp4 allowed", n("socket"), []uint64{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, 0}, allow},
		{"socket udp6 allowed", n("socket"), []uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, 0}, allow},
		{"socket unix denied", n("socket"), []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, eperm},
		{"socket netlink denied", n("socket"), []uint64{unix.AF_NETLINK, unix.SOCK_RAW, 0}, eperm},
		{"socket packet denied", n("socket"), []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, eperm},
		{"socket raw ipv4 denied", n("socket"), []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, eperm},
		{"socket ping denied", n("socket"), []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP}, eperm},
		{"socket seqpacket denied", n("socket"), []uint64{unix.AF_INET, unix.SOCK_SEQPACKET, 0}, eperm},
		{"socket family with high bits denied", n("socket"), []uint64{0x1_0000_0000 | unix.AF_UNIX, unix.SOCK_STREAM, 0}, eperm},
		{"tgkill own thread allowed", n("tgkill"), []uint64{pid, pid + 1, uint64(unix.SIGURG)}, allow},
		{"tgkill another process denied", n("tgkill"), []uint64{1, 1, uint64(unix.SIGKILL)}, eperm},
		{"kill self allowed", n("kill"), []uint64{pid, uint64(unix.SIGABRT)}, allow},
		{"kill parent denied", n("kill"), []uint64{pid - 1, uint64(unix.SIGKILL)}, eperm},
		{"kill process group denied", n("kill"), []uint64{0, uint64(unix.SIGKILL)}, eperm},
		{"kill everyone denied", n("kill"), []uint64{0xffffffffffffffff, uint64(unix.SIGKILL)}, eperm},
		{"tkill denied", n("tkill"), []uint64{pid, uint64(unix.SIGKILL)}, eperm},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, p, auditArch, tc.nr, tc.args...); got != tc.want {
				t.Fatalf("got %#x; want %#x", got, tc.want)
			}
		})
	}
	if got := eval(t, p, unix.AUDIT_ARCH_I386, n("read")); got != kill {
		t.Errorf("foreign architecture: got %#x; want kill", got)
	}
	if _, err := BuildHTTPSClient(0); err == nil {
		t.Error("BuildHTTPSClient(0) accepted")
	}
}

// TestHTTPSClientPolicy pins what the guard worker must never be allowed.
func TestHTTPSClientPolicy(t *testing.T) {
	for _, never := range []string{"execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev",
		"mount", "umount2", "unshare", "setns", "bpf", "perf_event_open", "io_uring_setup", "keyctl", "bind", "listen",
		"accept", "accept4", "socketpair", "memfd_create", "ioctl", "prctl", "setuid", "capset", "chroot", "tkill",
		"pidfd_open", "pidfd_send_signal", "mkdir", "mkdirat", "unlink", "unlinkat", "rename", "renameat", "renameat2",
		"link", "linkat", "symlink", "symlinkat", "truncate", "ftruncate", "chmod", "fchmod", "fchmodat", "chown", "fchown",
		"fchownat", "setxattr", "fsetxattr", "creat", "mknod", "mknodat"} {
		if slices.Contains(HTTPSClientAllowed(), never) || slices.Contains(HTTPSClientArgChecked(), never) {
			t.Errorf("%s is allowed to the HTTPS client", never)
		}
	}
	for _, name := range append(HTTPSClientAllowed(), HTTPSClientArgChecked()...) {
		if slices.Contains(AlwaysDenied(), name) {
			t.Errorf("%s is both always denied and allowed", name)
		}
		if _, ok := SyscallNumber(name); !ok && !legacyOnly[name] {
			t.Errorf("%s has no number on this architecture", name)
		}
	}
}

// TestTreeIsShallow bounds the work per syscall: the search visits about
// log2(rules) inner nodes, never the whole list (the filter used to compare
// the number with every listed syscall in turn, some 300 instructions for
// the last one).
func TestTreeIsShallow(t *testing.T) {
	p, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	worst := 0
	for nr := uint32(0); nr < 1024; nr++ {
		_, steps := run(t, p, auditArch, nr)
		worst = max(worst, steps)
	}
	if worst > 32 {
		t.Fatalf("%d instructions to decide the worst syscall; want a logarithmic search", worst)
	}
	t.Logf("at most %d instructions per syscall, %d in the program", worst, len(p.Filter))
}

// TestSocketpairStreamOnly walks the socketpair rule over every socket
// type, with and without the SOCK_NONBLOCK and SOCK_CLOEXEC flags and with
// junk in the upper 32 bits of the registers, for every family up to
// AF_MAX: only an AF_UNIX SOCK_STREAM pair may be made. A datagram pair
// reaches any host socket by path with sendto, no connect needed; a check
// on the unmasked type would refuse SOCK_STREAM|SOCK_CLOEXEC, which
// Python's socket.socketpair passes.
func TestSocketpairStreamOnly(t *testing.T) {
	p, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	nr, ok := SyscallNumber("socketpair")
	if !ok {
		t.Fatal("no number for socketpair")
	}
	const high = 0xffffffff00000000 // ignored by the kernel: family and type are ints
	flagSets := []uint64{0, unix.SOCK_NONBLOCK, unix.SOCK_CLOEXEC, unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC}
	for family := uint64(0); family <= unix.AF_MAX; family++ {
		for typ := uint64(0); typ <= sockTypeMask; typ++ {
			for _, flags := range flagSets {
				for _, junk := range []uint64{0, high} {
					want := eperm
					if family == unix.AF_UNIX && typ == unix.SOCK_STREAM {
						want = allow
					}
					if got := eval(t, p, auditArch, nr, family|junk, typ|flags|junk, 0); got != want {
						t.Fatalf("socketpair(%#x, %#x): got %#x; want %#x", family|junk, typ|flags|junk, got, want)
					}
				}
			}
		}
	}
	named := []struct {
		name        string
		family, typ uint64
		want        uint32
	}{
		{"stream", unix.AF_UNIX, unix.SOCK_STREAM, allow},
		{"stream cloexec nonblock", unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, allow},
		{"datagram", unix.AF_UNIX, unix.SOCK_DGRAM, eperm},
		{"datagram cloexec", unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, eperm},
		{"seqpacket", unix.AF_UNIX, unix.SOCK_SEQPACKET, eperm},
		{"raw", unix.AF_UNIX, unix.SOCK_RAW, eperm},
		{"datagram with junk above the type mask", unix.AF_UNIX, 0x10 | unix.SOCK_DGRAM, eperm},
		{"inet stream", unix.AF_INET, unix.SOCK_STREAM, eperm},
	}
	for _, tc := range named {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, p, auditArch, nr, tc.family, tc.typ, 0); got != tc.want {
				t.Fatalf("got %#x; want %#x", got, tc.want)
			}
		})
	}
}

// TestToolchainSyscallsAllowed pins the calls ordinary tools make — GNU
// make's seteuid before every job, sync, ionice, V8's memory protection
// keys — as allowed in the command profile, and capset and the calls that
// create or address a socket as denied; the HTTPS client gets none of the
// new ones.
func TestToolchainSyscallsAllowed(t *testing.T) {
	p, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
		"sync", "syncfs", "ioprio_get", "ioprio_set", "pkey_alloc", "pkey_free", "pkey_mprotect"} {
		t.Run(name, func(t *testing.T) {
			if !slices.Contains(Allowed(), name) {
				t.Fatalf("%s is not on the allowlist", name)
			}
			nr, ok := SyscallNumber(name)
			if !ok {
				t.Fatalf("no number for %s", name)
			}
			if got := eval(t, p, auditArch, nr); got != allow {
				t.Fatalf("got %#x; want allow", got)
			}
		})
	}
	for _, name := range []string{"capset", "socket", "bind", "listen", "connect", "accept", "accept4"} {
		t.Run(name+" denied", func(t *testing.T) {
			nr, ok := SyscallNumber(name)
			if !ok {
				t.Fatalf("no number for %s", name)
			}
			if got := eval(t, p, auditArch, nr, unix.AF_UNIX, unix.SOCK_STREAM, 0); got != eperm {
				t.Fatalf("got %#x; want EPERM", got)
			}
		})
	}
	for _, name := range []string{"setuid", "setresuid", "setgroups", "sync"} {
		if slices.Contains(HTTPSClientAllowed(), name) {
			t.Errorf("%s is allowed to the HTTPS client", name)
		}
	}
}
