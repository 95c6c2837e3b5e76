//go:build linux && (amd64 || arm64)

package seccomp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Offsets into struct seccomp_data (little-endian on both supported
// architectures, so the low 32 bits of argument i are at argOff(i)).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

func argLow(i uint32) uint32 { return offArgs + 8*i }

// cloneNamespaceFlags are the CLONE_NEW* flags clone(2) accepts. A command
// that may create namespaces can build its own view of the system (a user
// namespace grants capabilities inside it, the usual first step of kernel
// exploits). CLONE_NEWTIME is absent: in clone(2) its bit is part of the
// exit-signal byte and the kernel only accepts it via clone3/unshare, both
// denied.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// x32SyscallBit marks x32 syscall numbers on amd64.
const x32SyscallBit = 0x40000000

// maxInstructions is the kernel's BPF_MAXINSNS.
const maxInstructions = 4096

// Actions.
var (
	retAllow  = bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	retKill   = bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS}
	retEPERM  = bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	retENOSYS = bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)}
)

// Profile is an assembled filter and its hash.
type Profile struct {
	// Filter is the program in the kernel's struct sock_filter layout.
	Filter []unix.SockFilter
	// SHA256 is the hex SHA-256 of the program's bytes (8 bytes per
	// instruction: code, jt, jf, k, little-endian), recorded with every
	// command so an auditor can tell which profile was in force.
	SHA256 string
}

// Build assembles the filter for the running architecture.
func Build() (*Profile, error) {
	prog, err := program()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, bug(fmt.Errorf("assemble: %w", err))
	}
	if len(raw) > maxInstructions {
		return nil, bug(fmt.Errorf("program has %d instructions, the kernel accepts %d", len(raw), maxInstructions))
	}
	b := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		b = binary.LittleEndian.AppendUint16(b, r.Op)
		b = append(b, r.Jt, r.Jf)
		b = binary.LittleEndian.AppendUint32(b, r.K)
	}
	return FromBytes(b)
}

// Bytes returns the program in the kernel's layout, 8 bytes per
// instruction (code, jt, jf, k, little-endian): what SHA256 hashes.
func (p *Profile) Bytes() []byte {
	b := make([]byte, 0, 8*len(p.Filter))
	for _, f := range p.Filter {
		b = binary.LittleEndian.AppendUint16(b, f.Code)
		b = append(b, f.Jt, f.Jf)
		b = binary.LittleEndian.AppendUint32(b, f.K)
	}
	return b
}

// FromBytes decodes a program produced by Bytes and hashes it. The parent
// builds the profile once and hands the bytes to each launcher, which
// checks the hash before installing them.
func FromBytes(b []byte) (*Profile, error) {
	if len(b) == 0 || len(b)%8 != 0 || len(b)/8 > maxInstructions {
		return nil, fmt.Errorf("seccomp: program of %d bytes is not a whole number of 1 to %d instructions", len(b), maxInstructions)
	}
	p := &Profile{Filter: make([]unix.SockFilter, len(b)/8)}
	for i := range p.Filter {
		c := b[8*i:]
		p.Filter[i] = unix.SockFilter{Code: binary.LittleEndian.Uint16(c), Jt: c[2], Jf: c[3], K: binary.LittleEndian.Uint32(c[4:])}
	}
	h := sha256.Sum256(b)
	p.SHA256 = hex.EncodeToString(h[:])
	return p, nil
}

// program builds the instructions in the order documented on the package.
func program() ([]bpf.Instruction, error) {
	seen := map[string]bool{}
	for _, list := range [][]string{alwaysDenied, ArgChecked(), allowed} {
		for _, name := range list {
			if seen[name] {
				// Invariant: a syscall has exactly one rule, so widening
				// the allowlist can never shadow an always-denied entry.
				return nil, bug(fmt.Errorf("syscall %q listed twice", name))
			}
			seen[name] = true
		}
	}

	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		// Security: only the native ABI. Another ABI numbers syscalls
		// differently and would bypass every rule below.
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		retKill,
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if rejectX32 {
		// Security: x32 numbers carry bit 30 and map to the same kernel
		// entry points under different numbers.
		p = append(p, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1}, retKill)
	}
	ret := func(nr uint32, r bpf.Instruction) {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: 1}, r)
	}
	for _, name := range alwaysDenied {
		nr, ok := sysnums[name]
		if !ok {
			continue // absent on this architecture
		}
		if name == "clone3" {
			// clone3 passes its flags in memory, which BPF cannot read:
			// ENOSYS makes glibc fall back to clone, which is checked.
			ret(nr, retENOSYS)
			continue
		}
		ret(nr, retEPERM)
	}

	// clone: no namespace flags.
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: sysnums["clone"], SkipTrue: 4},
		bpf.LoadAbsolute{Off: argLow(0), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNamespaceFlags, SkipFalse: 1},
		retEPERM,
		retAllow,
	)
	// ioctl: the request is an unsigned int; the kernel ignores the upper
	// 32 bits of the register, so only the low word is compared (a filter
	// comparing 64 bits is bypassed with 0xffffffff00005412).
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: sysnums["ioctl"], SkipTrue: 6},
		bpf.LoadAbsolute{Off: argLow(1), Size: 4},
		// Security: TIOCSTI pushes bytes into a terminal's input queue
		// (commands typed into the operator's shell).
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCSTI, SkipFalse: 1},
		retEPERM,
		// Security: TIOCLINUX can paste the console selection (same
		// injection on a virtual console).
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCLINUX, SkipFalse: 1},
		retEPERM,
		retAllow,
	)
	// socketpair: AF_UNIX only. A connected pair is useful to shells and
	// tools and reaches nothing outside the sandbox.
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: sysnums["socketpair"], SkipTrue: 4},
		bpf.LoadAbsolute{Off: argLow(0), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 1},
		retAllow,
		retEPERM,
	)
	// prlimit64: the caller's own limits only (pid 0). Another process of
	// the same uid — IronVise itself when it runs as that uid — must not
	// have its limits changed.
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: sysnums["prlimit64"], SkipTrue: 4},
		bpf.LoadAbsolute{Off: argLow(0), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 1},
		retAllow,
		retEPERM,
	)
	for _, name := range allowed {
		if nr, ok := sysnums[name]; ok {
			ret(nr, retAllow)
		}
	}
	// Default: EPERM, not kill, so tools report the refusal.
	return append(p, retEPERM), nil
}

// SyscallNumber returns the number of the named syscall on this
// architecture.
func SyscallNumber(name string) (uint32, bool) {
	nr, ok := sysnums[name]
	return nr, ok
}

// bug marks an impossible state of the policy tables.
func bug(err error) error {
	return fmt.Errorf("seccomp: BUG: %w", err)
}
