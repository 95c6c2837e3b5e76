//go:build linux && (amd64 || arm64)

package seccomp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

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

// sockTypeMask is the kernel's SOCK_TYPE_MASK: the bits of a socket type
// argument that select the type, without the SOCK_NONBLOCK and
// SOCK_CLOEXEC flags.
const sockTypeMask = 0xf

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

// Build returns the sandboxed commands' filter for the running
// architecture.
//
// On amd64 the program was assembled when the source was generated
// (commandProgram, which TestCommandProgram keeps equal to what
// commandRules assemble to): every process that runs a command needs it,
// and assembling it costs a fresh process 1.6–1.9 ms of CPU
// (docs/operate/performance.md#start-up). Elsewhere it is assembled here.
func Build() (*Profile, error) {
	if commandProgram != "" {
		return FromBytes([]byte(commandProgram))
	}
	return assembleCommand()
}

// assembleCommand assembles the command profile from its rules.
func assembleCommand() (*Profile, error) {
	r, err := commandRules()
	if err != nil {
		return nil, err
	}
	return assemble(r)
}

// BuildProxy assembles the sandboxed commands' filter for proxy mode
// (docs/reference/sandboxing.md#network-egress): the command profile plus
// TCP client sockets (see [ProxyArgChecked] and [ProxyAllowed]). The hash
// differs from Build's, so the recorded hash tells the modes apart.
func BuildProxy() (*Profile, error) {
	r, err := commandRules()
	if err != nil {
		return nil, err
	}
	add := func(name string, rule []bpf.Instruction) error {
		if _, dup := r[name]; dup {
			return bug(fmt.Errorf("syscall %q of the proxy profile already has a rule", name))
		}
		r[name] = rule
		return nil
	}
	// Security: socket(2) for TCP over IPv4 and IPv6 only: the family
	// AF_INET or AF_INET6, the type SOCK_STREAM once SOCK_NONBLOCK and
	// SOCK_CLOEXEC are masked off, the protocol 0 or IPPROTO_TCP. No UDP
	// (with no resolver in the namespace a DNS query fails at once and
	// cannot carry data out through a resolver that forwards it), no
	// AF_UNIX (host daemons), no AF_NETLINK, no raw or packet sockets,
	// no MPTCP or SCTP. Every argument is an int: the low words only.
	if err := add("socket", []bpf.Instruction{
		bpf.LoadAbsolute{Off: argLow(0), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET6, SkipFalse: 7},
		bpf.LoadAbsolute{Off: argLow(1), Size: 4},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipFalse: 4},
		bpf.LoadAbsolute{Off: argLow(2), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_TCP, SkipFalse: 1},
		retAllow,
		retEPERM,
	}); err != nil {
		return nil, err
	}
	for _, name := range proxyAllowed {
		if err := add(name, []bpf.Instruction{retAllow}); err != nil {
			return nil, err
		}
	}
	return assemble(r)
}

// BuildContainer assembles the commands' filter of the native tier's
// container mode: the command profile without [GroupDenied], and, with
// ownerless, without [MetadataDenied] either (explicit file times refused
// too).
func BuildContainer(ownerless bool) (*Profile, error) {
	r, err := commandRules()
	if err != nil {
		return nil, err
	}
	deny := GroupDenied()
	if ownerless {
		deny = append(deny, MetadataDenied()...)
	}
	for _, name := range deny {
		if _, ok := r[name]; !ok {
			return nil, bug(fmt.Errorf("syscall %q of a container-mode list is not in the command profile", name))
		}
		r[name] = []bpf.Instruction{retEPERM}
	}
	if !ownerless {
		return assemble(r)
	}
	for name, arg := range metadataNowOnly {
		// Setting the times to now (a NULL times pointer) is what
		// touch does; explicit times are refused.
		r[name] = []bpf.Instruction{
			bpf.LoadAbsolute{Off: argLow(arg), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 3},
			bpf.LoadAbsolute{Off: argLow(arg) + 4, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 1},
			retAllow,
			retEPERM,
		}
	}
	return assemble(r)
}

// BuildHTTPSClient assembles the HTTPS-client filter for the process pid
// (the caller's own: kill and tgkill are allowed towards it only).
func BuildHTTPSClient(pid int) (*Profile, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("seccomp: https client profile: pid %d is not a process id", pid)
	}
	r, err := httpsClientRules(uint32(pid))
	if err != nil {
		return nil, err
	}
	return assemble(r)
}

// assemble turns the rules into a program and its hash.
func assemble(rules map[string][]bpf.Instruction) (*Profile, error) {
	prog, err := program(rules)
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

// A rule is the block of instructions that decides one syscall. It runs
// with the syscall number in A, may load arguments, and always ends in a
// return; jumps inside it are relative to it.

// commandRules are the rules of the sandboxed commands' profile.
func commandRules() (map[string][]bpf.Instruction, error) {
	arg := map[string][]bpf.Instruction{
		// clone: no namespace flags.
		"clone": {
			bpf.LoadAbsolute{Off: argLow(0), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNamespaceFlags, SkipFalse: 1},
			retEPERM,
			retAllow,
		},
		// ioctl: the request is an unsigned int; the kernel ignores the
		// upper 32 bits of the register, so only the low word is compared
		// (a filter comparing 64 bits is bypassed with
		// 0xffffffff00005412).
		"ioctl": {
			bpf.LoadAbsolute{Off: argLow(1), Size: 4},
			// Security: TIOCSTI pushes bytes into a terminal's input
			// queue (commands typed into the operator's shell).
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCSTI, SkipFalse: 1},
			retEPERM,
			// Security: TIOCLINUX can paste the console selection (same
			// injection on a virtual console).
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCLINUX, SkipFalse: 1},
			retEPERM,
			retAllow,
		},
		// socketpair: AF_UNIX and SOCK_STREAM only, the type compared
		// after masking off SOCK_NONBLOCK and SOCK_CLOEXEC. A connected
		// stream pair is what shells, make's job server, Python's
		// subprocess and Node's child_process use.
		//
		// Security: an AF_UNIX datagram socket needs no connect(2) to
		// send: sendto(2) or sendmsg(2) with any pathname delivers to the
		// host socket bound there (/dev/log, journald, a daemon's
		// control socket), SCM_RIGHTS hands that daemon open
		// descriptors, and neither the read-only mount nor Landlock
		// stops it (Landlock up to ABI 7 does not govern pathname Unix
		// sockets, so a socket in a directory it hides is reached just
		// the same). SOCK_SEQPACKET, and any other type, is refused as
		// well. Every other way to an addressable AF_UNIX socket is
		// closed too: socket(2) is not allowed for any family; bind,
		// listen, connect, accept and accept4 are not allowed;
		// sendto/sendmsg with an address on a connected stream socket
		// fail in the kernel with EISCONN; the launcher marks every
		// inherited descriptor above stderr close-on-exec
		// (internal/sandbox/native/launch/launcher_linux.go), and
		// opening a socket's path or /proc/<pid>/fd/<n> of a socket
		// fails with ENXIO. The family and type are ints: the kernel
		// ignores the upper 32 bits of both registers, so only the low
		// words are compared.
		"socketpair": {
			bpf.LoadAbsolute{Off: argLow(0), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 4},
			bpf.LoadAbsolute{Off: argLow(1), Size: 4},
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipFalse: 1},
			retAllow,
			retEPERM,
		},
		// prlimit64: the caller's own limits only (pid 0). Another process
		// of the same uid — IronVise itself when it runs as that uid —
		// must not have its limits changed.
		"prlimit64": {
			bpf.LoadAbsolute{Off: argLow(0), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 1},
			retAllow,
			retEPERM,
		},
	}
	return rules(allowed, ArgChecked(), arg)
}

// httpsClientRules are the rules of the HTTPS-client profile for process
// pid.
func httpsClientRules(pid uint32) (map[string][]bpf.Instruction, error) {
	// onlySelf allows a signal syscall whose first argument is pid.
	onlySelf := []bpf.Instruction{
		bpf.LoadAbsolute{Off: argLow(0), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: pid, SkipFalse: 1},
		retAllow,
		retEPERM,
	}
	arg := map[string][]bpf.Instruction{
		// Security: clone makes threads only (CLONE_THREAD set, no
		// namespace flags). A new process is the first step to running
		// something else; the worker never needs one.
		"clone": {
			bpf.LoadAbsolute{Off: argLow(0), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNamespaceFlags, SkipFalse: 1},
			retEPERM,
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_THREAD, SkipFalse: 1},
			retAllow,
			retEPERM,
		},
		// Security: IPv4 and IPv6 stream and datagram sockets with the
		// default protocol only, the low type bits compared without the
		// SOCK_NONBLOCK and SOCK_CLOEXEC flags. No AF_UNIX (host daemons
		// such as Docker or D-Bus listen there), no AF_NETLINK, no raw or
		// packet sockets even for root.
		"socket": {
			bpf.LoadAbsolute{Off: argLow(0), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET6, SkipFalse: 7},
			bpf.LoadAbsolute{Off: argLow(2), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 5},
			bpf.LoadAbsolute{Off: argLow(1), Size: 4},
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_DGRAM, SkipFalse: 1},
			retAllow,
			retEPERM,
		},
		// Security: signals to the process itself only (the Go runtime
		// preempts its threads with tgkill and re-raises fatal signals
		// with kill); other processes of the same user are out of reach
		// even where Landlock cannot scope signals (ABI < 6).
		"kill":   onlySelf,
		"tgkill": onlySelf,
	}
	return rules(httpsClientAllowed, HTTPSClientArgChecked(), arg)
}

// rules maps every syscall of the always-denied list, argChecked (whose
// blocks are in arg) and allowed to its rule. A name listed twice is a bug:
// widening an allowlist must never shadow an always-denied entry.
func rules(allowed, argChecked []string, arg map[string][]bpf.Instruction) (map[string][]bpf.Instruction, error) {
	out := map[string][]bpf.Instruction{}
	add := func(name string, r []bpf.Instruction) error {
		if _, dup := out[name]; dup {
			return bug(fmt.Errorf("syscall %q listed twice", name))
		}
		out[name] = r
		return nil
	}
	for _, name := range alwaysDenied {
		r := []bpf.Instruction{retEPERM}
		if name == "clone3" {
			// clone3 passes its flags in memory, which BPF cannot read:
			// ENOSYS makes glibc fall back to clone, which is checked.
			r = []bpf.Instruction{retENOSYS}
		}
		if err := add(name, r); err != nil {
			return nil, err
		}
	}
	for _, name := range argChecked {
		r, ok := arg[name]
		if !ok {
			return nil, bug(fmt.Errorf("syscall %q has no argument rule", name))
		}
		if err := add(name, r); err != nil {
			return nil, err
		}
	}
	for _, name := range allowed {
		if err := add(name, []bpf.Instruction{retAllow}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// interval is a run of syscall numbers, from lo up to the next interval's
// lo, that share one rule.
type interval struct {
	lo   uint32
	rule []bpf.Instruction
}

// program builds the filter: the architecture checks, then a binary search
// over the syscall number; a number without a rule gets EPERM.
func program(byName map[string][]bpf.Instruction) ([]bpf.Instruction, error) {
	nums, err := sysnums()
	if err != nil {
		return nil, err
	}
	byNr := map[uint32][]bpf.Instruction{}
	for name, r := range byName {
		if nr, ok := nums[name]; ok { // absent on this architecture otherwise
			byNr[nr] = r
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
	tree, err := searchTree(intervals(byNr))
	if err != nil {
		return nil, err
	}
	return append(p, tree...), nil
}

// intervals partitions all syscall numbers into runs with one rule each:
// neighbours with the same one-instruction rule (allow, EPERM, ENOSYS) are
// merged, numbers without a rule get EPERM, and an argument-checking rule
// (several instructions) is never merged, so its run is its own number.
func intervals(byNr map[uint32][]bpf.Instruction) []interval {
	nrs := make([]uint32, 0, len(byNr))
	for nr := range byNr {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	deny := []bpf.Instruction{retEPERM}
	var out []interval
	push := func(lo uint32, r []bpf.Instruction) {
		if n := len(out); n > 0 && len(r) == 1 && len(out[n-1].rule) == 1 && out[n-1].rule[0] == r[0] {
			return // same plain action as the run before: extend it
		}
		out = append(out, interval{lo, r})
	}
	next := uint32(0) // the first number not covered yet
	for _, nr := range nrs {
		if nr > next {
			push(next, deny)
		}
		push(nr, byNr[nr])
		next = nr + 1
	}
	push(next, deny)
	return out
}

// searchTree decides the syscall number in A, which lies in the runs of
// list (sorted by lo; the first starts at 0 and the last runs to the end).
// An inner node splits the runs at the middle one's lo: A ≥ lo goes to the
// upper half, anything else to the lower half, which comes right after the
// node. When the lower half is longer than a conditional jump reaches, the
// node jumps over it with an unconditional jump (32-bit offset) instead.
// A leaf is the run's rule. Every comparison uses K only, so the kernel's
// filter cache can still prove the plainly allowed syscalls constant at
// install time.
func searchTree(list []interval) ([]bpf.Instruction, error) {
	if len(list) == 1 {
		if len(list[0].rule) == 0 {
			return nil, bug(fmt.Errorf("empty rule at syscall %d", list[0].lo))
		}
		return list[0].rule, nil
	}
	mid := len(list) / 2
	lower, err := searchTree(list[:mid])
	if err != nil {
		return nil, err
	}
	upper, err := searchTree(list[mid:])
	if err != nil {
		return nil, err
	}
	var p []bpf.Instruction
	if len(lower) <= 255 {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: list[mid].lo, SkipTrue: uint8(len(lower))})
	} else {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: list[mid].lo, SkipFalse: 1},
			bpf.Jump{Skip: uint32(len(lower))},
		)
	}
	p = append(p, lower...)
	return append(p, upper...), nil
}

// SyscallNumber returns the number of the named syscall on this
// architecture.
func SyscallNumber(name string) (uint32, bool) {
	nums, err := sysnums()
	if err != nil {
		return 0, false
	}
	nr, ok := nums[name]
	return nr, ok
}
