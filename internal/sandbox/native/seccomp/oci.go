package seccomp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// The command profile for a container runtime.
//
// Docker and Podman take a seccomp profile as JSON (--security-opt
// seccomp=FILE) and have libseccomp compile it inside the OCI runtime, so
// the container tier cannot install IronVise's BPF program itself. OCIProfile
// writes the same policy — the same three lists, the same argument rules —
// in that format, so the two tiers deny the same system calls. The argument
// rules are the one part written twice (here and in commandRules); the
// tests compare the two on every listed syscall.

// Linux ABI values the argument rules compare against. They are the same
// on amd64 and arm64 and are written out so that the profile can be made on
// any host that drives a Linux container runtime (Docker Desktop runs one
// in a VM); the Linux tests check them against golang.org/x/sys/unix.
const (
	linuxCloneNamespaceFlags = 0x7e020000 // CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
	linuxTIOCSTI             = 0x5412
	linuxTIOCLINUX           = 0x541c
	linuxAFUnix              = 1
	linuxSockStream          = 1
	linuxSockTypeMask        = 0xf
	linuxEPERM               = 1
	linuxENOSYS              = 38
)

// upper32 selects the upper half of a 64-bit register.
const upper32 = 0xffffffff_00000000

// OCI is the command profile in the container runtimes' JSON format, with
// the SHA-256 of exactly those bytes (what a container run records).
type OCI struct {
	JSON   []byte
	SHA256 string
}

// ociProfile is the seccomp profile format of Docker and Podman
// (containers/common pkg/seccomp, moby profiles/seccomp): the fields
// IronVise uses.
type ociProfile struct {
	DefaultAction   string       `json:"defaultAction"`
	DefaultErrnoRet uint         `json:"defaultErrnoRet"`
	Architectures   []string     `json:"architectures"`
	Syscalls        []ociSyscall `json:"syscalls"`
}

type ociSyscall struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet,omitempty"`
	Args     []ociArg `json:"args,omitempty"`
	Comment  string   `json:"comment,omitempty"`
}

// ociArg is one comparison; a rule's comparisons must all hold. libseccomp
// compares all 64 bits of the register; for SCMP_CMP_MASKED_EQ, Value is
// the mask and ValueTwo the expected result.
type ociArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

const (
	actAllow = "SCMP_ACT_ALLOW"
	actErrno = "SCMP_ACT_ERRNO"
	opEq     = "SCMP_CMP_EQ"
	opMasked = "SCMP_CMP_MASKED_EQ"
)

// ociArches maps GOARCH to the one architecture the profile admits. A
// system call of any other ABI (i386 through int 0x80 on amd64, arm32 on
// arm64) meets libseccomp's bad-architecture action, which kills, as the
// native filter does.
var ociArches = map[string]string{"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64"}

// OCIProfile returns the sandboxed commands' profile (the one Build
// assembles for the native tier) in the JSON format Docker and Podman take,
// for Linux containers of architecture goarch ("amd64" or "arm64"):
// default EPERM, AlwaysDenied EPERM (clone3 ENOSYS), ArgChecked with their
// argument rules, Allowed allowed. Names the container host's libseccomp
// does not know are skipped by the runtime and so meet the default, EPERM.
func OCIProfile(goarch string) (*OCI, error) { return ociProfileWith(goarch, nil) }

// Linux ABI values of the proxy-mode rules (see OCIProxyProfile).
const (
	linuxAFInet     = 2
	linuxAFInet6    = 10
	linuxIPProtoTCP = 6
)

// OCIProxyProfile is OCIProfile for a container in proxy mode, whose
// network namespace holds only loopback and IronVise's egress proxy on it
// (internal/sandbox/container, docs/design/sandbox.md#container-tier). It
// adds what a TCP client of the proxy needs and nothing more:
// socket(AF_INET or AF_INET6, SOCK_STREAM with any of SOCK_NONBLOCK and
// SOCK_CLOEXEC, protocol 0 or IPPROTO_TCP), and connect.
//
// Security: no UDP, so there is no resolver to ask (names are resolved by
// the proxy, and DNS cannot carry data out); no raw, packet or netlink
// socket; still no AF_UNIX socket (a host daemon behind a mounted socket
// is an escape) and no bind, listen or accept. connect is not checked by
// address — a filter cannot read memory — and needs no check: the
// namespace has no route anywhere but loopback.
func OCIProxyProfile(goarch string) (*OCI, error) {
	var rules []ociSyscall
	for _, family := range []uint64{linuxAFInet, linuxAFInet6} {
		for _, proto := range []uint64{0, linuxIPProtoTCP} {
			rules = append(rules, ociSyscall{Names: []string{"socket"}, Action: actAllow,
				Comment: "proxy mode: a TCP client socket of IPv4 or IPv6 only",
				Args: []ociArg{
					{Index: 0, Value: family, Op: opEq},
					{Index: 1, Value: linuxSockTypeMask, ValueTwo: linuxSockStream, Op: opMasked},
					{Index: 2, Value: proto, Op: opEq},
				}})
		}
	}
	rules = append(rules, ociSyscall{Names: []string{"connect"}, Action: actAllow,
		Comment: "proxy mode: the namespace's only reachable address is loopback"})
	return ociProfileWith(goarch, rules)
}

// ociProfileWith assembles the command profile with the rules of extra
// added before the plain allowlist; nil gives OCIProfile's exact bytes.
func ociProfileWith(goarch string, extra []ociSyscall) (*OCI, error) {
	arch, ok := ociArches[goarch]
	if !ok {
		return nil, fmt.Errorf("seccomp: no container profile for linux/%s: %w", goarch, errors.ErrUnsupported)
	}
	p := ociProfile{DefaultAction: actErrno, DefaultErrnoRet: linuxEPERM, Architectures: []string{arch}}
	eperm, enosys := uint(linuxEPERM), uint(linuxENOSYS)
	denied := slices.DeleteFunc(AlwaysDenied(), func(s string) bool { return s == "clone3" })
	p.Syscalls = append(p.Syscalls,
		ociSyscall{Names: denied, Action: actErrno, ErrnoRet: &eperm,
			Comment: "always denied (AlwaysDenied): debugging, io_uring, BPF, perf, userfaultfd, keyrings, mounts, namespaces, modules, file handles"},
		// clone3 passes its flags in memory, out of a filter's reach:
		// ENOSYS makes libc fall back to clone, whose flags are checked.
		ociSyscall{Names: []string{"clone3"}, Action: actErrno, ErrnoRet: &enosys, Comment: "libc falls back to clone"},
	)
	rules := ociArgRules()
	for _, name := range ArgChecked() {
		r, ok := rules[name]
		if !ok {
			return nil, bug(fmt.Errorf("syscall %q has no container argument rule", name))
		}
		p.Syscalls = append(p.Syscalls, r...)
	}
	p.Syscalls = append(p.Syscalls, extra...)
	p.Syscalls = append(p.Syscalls, ociSyscall{Names: Allowed(), Action: actAllow})
	if err := checkOCINames(p.Syscalls); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, bug(fmt.Errorf("encode the container profile: %w", err))
	}
	sum := sha256.Sum256(b)
	return &OCI{JSON: b, SHA256: hex.EncodeToString(sum[:])}, nil
}

// ociArgRules are commandRules' argument rules for libseccomp. Several
// rules for one syscall are alternatives: the call is allowed if any of
// them holds, else it meets the default (EPERM).
func ociArgRules() map[string][]ociSyscall {
	allow := func(name, comment string, args ...ociArg) ociSyscall {
		return ociSyscall{Names: []string{name}, Action: actAllow, Args: args, Comment: comment}
	}
	// Security: ioctl's request is an unsigned int and the kernel ignores
	// the upper half of the register, but libseccomp compares all 64 bits,
	// so a plain "!= TIOCSTI" lets 0xffffffff00005412 through; and
	// libseccomp 2.5 silently mis-compiles a rule with two comparisons of
	// one argument (such a rule allowed every request). So each rule is a
	// single masked comparison: together they allow every zero-extended
	// request but TIOCSTI and TIOCLINUX, and the sign-extended ones (a
	// request with bit 31 set passed as an int), which cannot be either.
	var ioctl []ociSyscall
	for _, b := range ioctlAllowed() {
		ioctl = append(ioctl, allow("ioctl", "not TIOCSTI or TIOCLINUX (terminal input injection)", b))
	}
	return map[string][]ociSyscall{
		// Security: no namespace flags — a user namespace grants a full
		// capability set inside it, the usual first step of kernel
		// exploits (the same mask as cloneNamespaceFlags).
		"clone": {allow("clone", "no namespace flags",
			ociArg{Index: 0, Value: linuxCloneNamespaceFlags, ValueTwo: 0, Op: opMasked})},
		"ioctl": ioctl,
		// Security: an AF_UNIX stream pair only; a datagram socket reaches
		// any pathname socket without connect (see commandRules).
		"socketpair": {allow("socketpair", "AF_UNIX SOCK_STREAM only",
			ociArg{Index: 0, Value: linuxAFUnix, Op: opEq},
			ociArg{Index: 1, Value: linuxSockTypeMask, ValueTwo: linuxSockStream, Op: opMasked})},
		// Security: the caller's own limits only (pid 0).
		"prlimit64": {allow("prlimit64", "the caller's own limits only",
			ociArg{Index: 0, Value: 0, Op: opEq})},
	}
}

// ioctlDenied are the requests commandRules refuses.
var ioctlDenied = []uint64{linuxTIOCSTI, linuxTIOCLINUX}

// ioctlAllowed covers the allowed ioctl requests with aligned blocks, each
// one SCMP_CMP_MASKED_EQ comparison of argument 1: every zero-extended
// 32-bit request but ioctlDenied, and the sign-extended half
// (0xffffffff80000000 and above).
func ioctlAllowed() []ociArg {
	var out []ociArg
	lo := uint64(0)
	for _, d := range append(slices.Sorted(slices.Values(ioctlDenied)), 1<<32) {
		if d > lo {
			out = append(out, maskedBlocks(1, lo, d-1)...)
		}
		lo = d + 1
	}
	return append(out, maskedBlocks(1, upper32|1<<31, ^uint64(0))...)
}

// maskedBlocks covers [lo, hi] of argument index with the fewest aligned
// power-of-two blocks, each a masked comparison.
func maskedBlocks(index uint, lo, hi uint64) []ociArg {
	var out []ociArg
	for {
		size := lo & -lo // the largest block aligned at lo
		if lo == 0 {
			size = 1 << 63
		}
		for size-1 > hi-lo {
			size >>= 1
		}
		out = append(out, ociArg{Index: index, Value: ^(size - 1), ValueTwo: lo, Op: opMasked})
		if hi-lo == size-1 {
			return out
		}
		lo += size
	}
}

// checkOCINames refuses a profile that names a syscall in two rules of
// different actions (libseccomp would refuse it, or one would shadow the
// other), except the alternatives of one argument-checked syscall.
func checkOCINames(rules []ociSyscall) error {
	action := map[string]string{}
	for _, r := range rules {
		for _, n := range r.Names {
			key := r.Action
			if r.ErrnoRet != nil {
				key += fmt.Sprint(*r.ErrnoRet)
			}
			if len(r.Args) == 0 {
				key += "/unconditional"
			}
			if prev, dup := action[n]; dup && (prev != key || len(r.Args) == 0) {
				return bug(fmt.Errorf("syscall %q has two container rules", n))
			}
			action[n] = key
		}
	}
	return nil
}

// bug marks an impossible state of the policy tables.
func bug(err error) error {
	return fmt.Errorf("seccomp: BUG: %w", err)
}
