//go:build linux

package egresstest

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Host is a host in a network namespace of the test's own, joined to the
// test's namespace by a veth pair: an HTTPS server with a certificate for
// allowed.test and denied.test, and a plain HTTP server. Both answer
// "hello from the test host: HOST PATH".
type Host struct {
	Addr     netip.Addr   // the host's address
	Prefix   netip.Prefix // the veth subnet, for an address opt-in
	TLSPort  int
	HTTPPort int
	CAPEM    []byte       // the servers' certificate, for clients to trust
	Hits     atomic.Int64 // requests the servers answered
	NetNS    string       // the namespace's name under /run/netns
}

var hostSeq atomic.Int64

// NewHost builds a host. It skips the test when not root or without
// ip(8), and removes the namespace and the veth pair at cleanup.
func NewHost(t testing.TB) *Host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("building the test host's network namespace needs root")
	}
	const ip = "/usr/sbin/ip"
	if _, err := os.Stat(ip); err != nil {
		t.Skipf("%s is not installed (.ci/run installs it)", ip)
	}
	n := hostSeq.Add(1)
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	// A /30 per host, from the pid: test binaries that run in parallel
	// do not collide.
	third := byte(os.Getpid() % 250)
	fourth := byte(4 * (n % 60))
	h := &Host{
		NetNS:  "ivt" + id,
		Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 231, third, fourth}), 30),
		Addr:   netip.AddrFrom4([4]byte{10, 231, third, fourth + 2}),
	}
	outside, inside := "ivo"+id, "ivi"+id
	local := netip.AddrFrom4([4]byte{10, 231, third, fourth + 1})
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", h.NetNS)
	t.Cleanup(func() {
		_ = exec.Command(ip, "link", "del", outside).Run()
		_ = exec.Command(ip, "netns", "del", h.NetNS).Run()
	})
	run("link", "add", outside, "type", "veth", "peer", "name", inside, "netns", h.NetNS)
	run("addr", "add", local.String()+"/30", "dev", outside)
	run("link", "set", outside, "up")
	run("-n", h.NetNS, "addr", "add", h.Addr.String()+"/30", "dev", inside)
	run("-n", h.NetNS, "link", "set", inside, "up")
	run("-n", h.NetNS, "link", "set", "lo", "up")

	cert, caPEM := Cert(t, "allowed.test", "denied.test")
	h.CAPEM = caPEM
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Hits.Add(1)
		fmt.Fprintf(w, "hello from the test host: %s %s\n", r.Host, r.URL.Path)
	})
	tlsLn := h.Listen(t)
	srv := httptest.NewUnstartedServer(handler)
	srv.Listener.Close()
	srv.Listener = tlsLn
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	// Refused tunnels end TLS handshakes early: not worth a log line.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h.TLSPort = tlsLn.Addr().(*net.TCPAddr).Port
	plainLn := h.Listen(t)
	plain := httptest.NewUnstartedServer(handler)
	plain.Listener.Close()
	plain.Listener = plainLn
	plain.Start()
	t.Cleanup(plain.Close)
	h.HTTPPort = plainLn.Addr().(*net.TCPAddr).Port
	return h
}

// Listen opens a TCP listener on a free port of the host's address
// inside its network namespace: a socket keeps the namespace it was made
// in, whichever thread accepts on it later.
func (h *Host) Listen(t testing.TB) net.Listener {
	t.Helper()
	ns, err := os.Open("/run/netns/" + h.NetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	var ln net.Listener
	errc := make(chan error, 1)
	go func() {
		// This thread changes namespace: it is never unlocked, so the
		// runtime discards it instead of reusing it.
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(h.Addr.String(), "0"))
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatalf("listen in the test host's namespace: %v", err)
	}
	return ln
}
