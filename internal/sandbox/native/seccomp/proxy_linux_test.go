//go:build linux && (amd64 || arm64)

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestProxyDecisions pins the proxy-mode profile: TCP client sockets over
// IPv4 and IPv6 and connect, and nothing else the command profile refuses.
func TestProxyDecisions(t *testing.T) {
	p, err := BuildProxy()
	if err != nil {
		t.Fatal(err)
	}
	n := func(name string) uint32 { return mustNumber(t, name) }
	stream := uint64(unix.SOCK_STREAM)
	cases := []decisionCase{
		{"socket tcp4 allowed", auditArch, n("socket"), []uint64{unix.AF_INET, stream, 0}, allow},
		{"socket tcp4 nonblock cloexec allowed", auditArch, n("socket"), []uint64{unix.AF_INET, stream | unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC, 0}, allow},
		{"socket tcp6 IPPROTO_TCP allowed", auditArch, n("socket"), []uint64{unix.AF_INET6, stream, unix.IPPROTO_TCP}, allow},
		{"connect allowed", auditArch, n("connect"), nil, allow},
		{"getsockopt allowed", auditArch, n("getsockopt"), nil, allow},
		{"shutdown allowed", auditArch, n("shutdown"), nil, allow},
		{"socket udp4 denied", auditArch, n("socket"), []uint64{unix.AF_INET, unix.SOCK_DGRAM, 0}, eperm},
		{"socket udp6 denied", auditArch, n("socket"), []uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC, 0}, eperm},
		{"socket unix stream denied", auditArch, n("socket"), []uint64{unix.AF_UNIX, stream, 0}, eperm},
		{"socket unix datagram denied", auditArch, n("socket"), []uint64{unix.AF_UNIX, unix.SOCK_DGRAM, 0}, eperm},
		{"socket netlink denied", auditArch, n("socket"), []uint64{unix.AF_NETLINK, unix.SOCK_RAW, 0}, eperm},
		{"socket packet denied", auditArch, n("socket"), []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, eperm},
		{"socket raw ipv4 denied", auditArch, n("socket"), []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, eperm},
		{"socket ping denied", auditArch, n("socket"), []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP}, eperm},
		{"socket seqpacket denied", auditArch, n("socket"), []uint64{unix.AF_INET, unix.SOCK_SEQPACKET, 0}, eperm},
		{"socket stream with IPPROTO_MPTCP denied", auditArch, n("socket"), []uint64{unix.AF_INET, stream, unix.IPPROTO_MPTCP}, eperm},
		{"socket stream with IPPROTO_SCTP denied", auditArch, n("socket"), []uint64{unix.AF_INET, stream, unix.IPPROTO_SCTP}, eperm},
		{"socket family with high bits denied", auditArch, n("socket"), []uint64{0x1_0000_0000 | unix.AF_UNIX, stream, 0}, eperm},
		{"bind denied", auditArch, n("bind"), nil, eperm},
		{"listen denied", auditArch, n("listen"), nil, eperm},
		{"accept4 denied", auditArch, n("accept4"), nil, eperm},
		{"socketpair datagram still denied", auditArch, n("socketpair"), []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, eperm},
		{"foreign architecture killed", unix.AUDIT_ARCH_I386, n("socket"), []uint64{unix.AF_INET, stream, 0}, kill},
		{"execve allowed", auditArch, n("execve"), nil, allow},
	}
	for _, a := range AlwaysDenied() {
		if v, ok := SyscallNumber(a); ok && a != "clone3" {
			cases = append(cases, decisionCase{a + " always denied", auditArch, v, nil, eperm})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := eval(t, p, tc.arch, tc.nr, tc.args...); got != tc.want {
				t.Fatalf("got %#x; want %#x", got, tc.want)
			}
		})
	}
}

// TestProxyProfileHashDiffers: the recorded hash tells the modes apart, and
// the proxy profile is stable.
func TestProxyProfileHashDiffers(t *testing.T) {
	a, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildProxy()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := BuildProxy()
	if a.SHA256 == b.SHA256 || b.SHA256 != c.SHA256 {
		t.Fatalf("hashes: none %s, proxy %s then %s", a.SHA256, b.SHA256, c.SHA256)
	}
	// The mode-none profile is unchanged: no socket, no connect.
	if got := eval(t, a, auditArch, mustNumber(t, "socket"), unix.AF_INET, unix.SOCK_STREAM, 0); got != eperm {
		t.Fatalf("mode none allows socket(AF_INET, SOCK_STREAM): %#x", got)
	}
	if got := eval(t, a, auditArch, mustNumber(t, "connect")); got != eperm {
		t.Fatalf("mode none allows connect: %#x", got)
	}
}
