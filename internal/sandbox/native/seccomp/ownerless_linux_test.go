//go:build linux && (amd64 || arm64)

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestOwnerlessDecisions: the ownerless container-mode profile refuses mode, owner
// and xattr changes and explicit file times, and is otherwise the command
// profile but for the group calls (TestContainerGroupDecisions).
func TestOwnerlessDecisions(t *testing.T) {
	p, err := BuildContainer(true)
	if err != nil {
		t.Fatal(err)
	}
	base, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	if p.SHA256 == base.SHA256 {
		t.Fatal("the ownerless profile hashes like the command profile: a record could not tell them apart")
	}
	var cases []decisionCase
	for _, name := range MetadataDenied() {
		if v, ok := SyscallNumber(name); ok {
			cases = append(cases, decisionCase{name + " denied", auditArch, v, nil, eperm})
			if got := eval(t, base, auditArch, v); got != allow {
				t.Fatalf("%s: the command profile answers %#x; the ownerless one should be its only difference", name, got)
			}
		}
	}
	if v, ok := SyscallNumber("utimensat"); ok {
		cases = append(cases,
			decisionCase{"utimensat to now allowed", auditArch, v, []uint64{3, 0x1000, 0, 0}, allow},
			decisionCase{"utimensat with times denied", auditArch, v, []uint64{3, 0x1000, 0x2000, 0}, eperm},
			decisionCase{"utimensat with a pointer above 4 GiB denied", auditArch, v, []uint64{3, 0x1000, 0x7fff00000000, 0}, eperm},
		)
	}
	if v, ok := SyscallNumber("utimes"); ok {
		cases = append(cases,
			decisionCase{"utimes to now allowed", auditArch, v, []uint64{0x1000, 0}, allow},
			decisionCase{"utimes with times denied", auditArch, v, []uint64{0x1000, 0x2000}, eperm},
		)
	}
	for _, name := range []string{"read", "execve", "openat", "unlinkat"} {
		cases = append(cases, decisionCase{name + " allowed", auditArch, mustNumber(t, name), nil, allow})
	}
	cases = append(cases,
		decisionCase{"socket denied", auditArch, mustNumber(t, "socket"), []uint64{unix.AF_UNIX}, eperm},
		decisionCase{"ptrace denied", auditArch, mustNumber(t, "ptrace"), nil, eperm},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, p, tc.arch, tc.nr, tc.args...); got != tc.want {
				t.Fatalf("got %#x; want %#x", got, tc.want)
			}
		})
	}
}

// TestContainerGroupDecisions: every container-mode profile refuses
// leaving the command's process group, and differs from the command
// profile in that alone (without ownerless) or in that and the metadata
// calls (ownerless).
func TestContainerGroupDecisions(t *testing.T) {
	base, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, ownerless := range []bool{false, true} {
		p, err := BuildContainer(ownerless)
		if err != nil {
			t.Fatal(err)
		}
		if p.SHA256 == base.SHA256 {
			t.Fatalf("ownerless=%v: the container-mode profile hashes like the command profile", ownerless)
		}
		for _, name := range GroupDenied() {
			nr := mustNumber(t, name)
			if got := eval(t, base, auditArch, nr); got != allow {
				t.Fatalf("%s: the command profile answers %#x; want it allowed there", name, got)
			}
			if got := eval(t, p, auditArch, nr); got != eperm {
				t.Errorf("ownerless=%v: %s answers %#x; want EPERM", ownerless, name, got)
			}
		}
		chmod := mustNumber(t, "fchmodat")
		want := uint32(allow)
		if ownerless {
			want = eperm
		}
		if got := eval(t, p, auditArch, chmod); got != want {
			t.Errorf("ownerless=%v: fchmodat answers %#x; want %#x", ownerless, got, want)
		}
		for _, name := range []string{"fork", "vfork", "kill", "getpgid", "getsid", "wait4"} {
			if got := eval(t, p, auditArch, mustNumber(t, name)); got != allow {
				t.Errorf("ownerless=%v: %s answers %#x; want allowed", ownerless, name, got)
			}
		}
	}
}
