//go:build linux && (amd64 || arm64)

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestOwnerlessDecisions: the container-mode profile refuses mode, owner
// and xattr changes and explicit file times, and is otherwise the command
// profile.
func TestOwnerlessDecisions(t *testing.T) {
	p, err := BuildOwnerless()
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
