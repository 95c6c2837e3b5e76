//go:build linux && (amd64 || arm64)

package seccomp

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOCIConstantsAreLinux(t *testing.T) {
	for name, c := range map[string][2]uint64{
		"namespace flags": {linuxCloneNamespaceFlags, cloneNamespaceFlags},
		"TIOCSTI":         {linuxTIOCSTI, unix.TIOCSTI},
		"TIOCLINUX":       {linuxTIOCLINUX, unix.TIOCLINUX},
		"AF_UNIX":         {linuxAFUnix, unix.AF_UNIX},
		"SOCK_STREAM":     {linuxSockStream, unix.SOCK_STREAM},
		"type mask":       {linuxSockTypeMask, sockTypeMask},
		"EPERM":           {linuxEPERM, uint64(unix.EPERM)},
		"ENOSYS":          {linuxENOSYS, uint64(unix.ENOSYS)},
	} {
		if c[0] != c[1] {
			t.Errorf("%s: %#x in the container profile, %#x in the kernel's headers", name, c[0], c[1])
		}
	}
}

// ociDecide is what libseccomp makes of the profile for one call: the
// action of the syscall's unconditional rule, or of its first rule whose
// comparisons all hold (64-bit), else the default.
func ociDecide(p ociProfile, name string, args []uint64) uint32 {
	ret := func(action string, errno *uint) uint32 {
		if action == actAllow {
			return unix.SECCOMP_RET_ALLOW
		}
		e := p.DefaultErrnoRet
		if errno != nil {
			e = *errno
		}
		return unix.SECCOMP_RET_ERRNO | uint32(e)
	}
	for _, r := range p.Syscalls {
		for _, n := range r.Names {
			if n != name {
				continue
			}
			match := true
			for _, a := range r.Args {
				v := args[a.Index]
				switch a.Op {
				case opEq:
					match = match && v == a.Value
				case opMasked:
					match = match && v&a.Value == a.ValueTwo
				default:
					panic("unexpected comparison " + a.Op)
				}
			}
			if match {
				return ret(r.Action, r.ErrnoRet)
			}
		}
	}
	return ret(p.DefaultAction, nil)
}

// TestOCIMatchesFilter: for every syscall of this architecture and a grid
// of arguments, the container profile decides as the native filter does.
// Where a register's upper half is neither zero nor a sign extension the
// kernel ignores, the container profile may only be stricter.
func TestOCIMatchesFilter(t *testing.T) {
	native, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	o, err := OCIProfile(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	p := decodeOCI(t, o.JSON)
	values := []uint64{0, 1, 2, uint64(unix.SIGCHLD), unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), unix.CLONE_NEWNET, unix.CLONE_NEWNS,
		unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD | unix.CLONE_SYSVSEM,
		unix.TIOCSTI, unix.TIOCLINUX, unix.TCGETS, unix.TIOCGWINSZ, unix.TIOCGPTN, 0xffffffff_00000000 | unix.TIOCGPTN,
		0xffffffff_00000000 | unix.TIOCSTI, 0x12345678_00000000 | unix.TIOCSTI, 0xffffffff_00000000 | unix.TIOCLINUX,
		unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, unix.SOCK_DGRAM, unix.SOCK_SEQPACKET, unix.AF_INET,
		unix.AF_UNIX | 0x1_00000000, 0x7fffffff, 0xffffffff, ^uint64(0)}
	canonical := func(v uint64) bool { return v>>32 == 0 || v>>31 == 1<<33-1 }
	checked := 0
	for name, nr := range nativeSysnums(t) {
		for _, a0 := range values {
			for _, a1 := range values {
				args := []uint64{a0, a1, 0, 0, 0, 0}
				want := eval(t, native, auditArch, nr, args...)
				got := ociDecide(p, name, args)
				checked++
				switch {
				case got == want:
				case got == unix.SECCOMP_RET_ALLOW:
					t.Fatalf("%s(%#x, %#x): the container profile allows what the native filter answers %#x", name, a0, a1, want)
				case canonical(a0) && canonical(a1) && !(name == "ioctl" && a1>>32 != 0 && a1&(1<<31) == 0):
					t.Fatalf("%s(%#x, %#x): container %#x, native %#x", name, a0, a1, got, want)
				}
			}
		}
	}
	t.Logf("%d decisions compared", checked)
}
