//go:build linux

package native

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/egresstest"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
	"github.com/ironvise/ironvise/internal/verdict"
)

// tableResolver resolves from a fixed table: an interface fake, because
// the test host's names (allowed.test, …) exist in no real DNS and the
// tests have no internet. Every lookup is counted.
type tableResolver struct {
	table   map[string][]netip.Addr
	lookups atomic.Int64
}

func (r *tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.lookups.Add(1)
	if a, ok := r.table[strings.ToLower(host)]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// proxyTier is a tier whose proxy resolves the test host's names.
func proxyTier(t *testing.T, h *egresstest.Host, opts sandbox.Options) (*Tier, *tableResolver) {
	t.Helper()
	res := &tableResolver{table: map[string][]netip.Addr{
		"allowed.test": {h.Addr},
		"denied.test":  {h.Addr},
		"meta.test":    {netip.MustParseAddr("169.254.169.254")},
	}}
	opts.Egress.Resolver = res
	return newTestTier(t, opts), res
}

// proxyRules allow allowed.test and meta.test (whose name resolves to the
// metadata address), and opt in to the test host's subnet.
func proxyRules(t *testing.T, h *egresstest.Host) *egress.Rules {
	t.Helper()
	d, err := egress.ParseDomains("allowed.test,meta.test")
	if err != nil {
		t.Fatal(err)
	}
	return egress.NewRules(d, []netip.Prefix{h.Prefix})
}

// inProxyMode runs the request in proxy mode under rules.
func inProxyMode(rules *egress.Rules) func(*sandbox.Request) {
	return func(q *sandbox.Request) { q.Egress = rules }
}

// records returns the records of host.
func recordsFor(r sandbox.Result, host string) []egress.Record {
	var out []egress.Record
	for _, rec := range r.Egress {
		if rec.Host == host {
			out = append(out, rec)
		}
	}
	return out
}

// TestProxyModeReachesAllowedHost: curl over HTTPS (CONNECT) and plain
// HTTP, and Python's urllib, reach the allowed host through the proxy;
// a host off the list is refused with the proxy's message; every
// connection is recorded.
func TestProxyModeReachesAllowedHost(t *testing.T) {
	requireTool(t, "/usr/bin/curl")
	h := egresstest.NewHost(t)
	tier, _ := proxyTier(t, h, sandbox.Options{})
	fx := newFixture(t)
	writeFile(t, fx.ws, "ca.pem", string(h.CAPEM))
	tls, plain := strconv.Itoa(h.TLSPort), strconv.Itoa(h.HTTPPort)
	cmd := `env | grep -i _proxy | sort
curl -sS --max-time 20 --cacert ca.pem https://allowed.test:` + tls + `/curl-tls; echo "curl-tls rc=$?"
curl -sS --max-time 20 http://allowed.test:` + plain + `/curl-plain; echo "curl-plain rc=$?"
curl -sS --max-time 20 --cacert ca.pem https://denied.test:` + tls + `/x; echo "curl-denied-tls rc=$?"
curl -sS --max-time 20 http://denied.test:` + plain + `/x; echo "curl-denied-plain rc=$?"
python3 -c '
import ssl, urllib.request
ctx = ssl.create_default_context(cafile="ca.pem")
print(urllib.request.urlopen("https://allowed.test:` + tls + `/py-tls", context=ctx, timeout=20).read().decode().strip())
print(urllib.request.urlopen("http://allowed.test:` + plain + `/py-plain", timeout=20).read().decode().strip())
try:
    urllib.request.urlopen("https://denied.test:` + tls + `/x", context=ctx, timeout=20)
except Exception as e:
    print("py-denied", e)
'`
	r := run(t, tier, fx, cmd, inProxyMode(proxyRules(t, h)))
	for _, want := range []string{
		"HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "HTTP_PROXY=http://127.0.0.1:3128",
		"ALL_PROXY=http://127.0.0.1:3128", "NO_PROXY=\n", "no_proxy=\n",
		"hello from the test host: allowed.test:" + tls + " /curl-tls\ncurl-tls rc=0",
		"hello from the test host: allowed.test:" + plain + " /curl-plain\ncurl-plain rc=0",
		"hello from the test host: allowed.test:" + tls + " /py-tls",
		"hello from the test host: allowed.test:" + plain + " /py-plain",
		// curl names the proxy's refusal of a CONNECT by its status; a
		// plain request gets the proxy's one-line reason as the body.
		"CONNECT tunnel failed, response 403",
		"ironvise egress: egress_domain_not_allowed",
		"Tunnel connection failed: 403 Forbidden",
	} {
		contains(t, r, want)
	}
	for _, bad := range []string{"curl-denied-tls rc=0"} {
		if strings.Contains(r.Stdout, bad) {
			t.Fatalf("%q:\n%s", bad, r.Observation())
		}
	}
	if r.Enforced.Network != "proxy" {
		t.Fatalf("enforced network %q, want proxy", r.Enforced.Network)
	}
	allowed := recordsFor(r, "allowed.test")
	if len(allowed) != 4 {
		t.Fatalf("%d records for allowed.test, want 4: %+v", len(allowed), r.Egress)
	}
	for _, rec := range allowed {
		if rec.Verdict != verdict.Allow || rec.Addr == "" || !strings.HasPrefix(rec.Addr, h.Addr.String()+":") || rec.BytesUp == 0 || rec.BytesDown == 0 {
			t.Fatalf("allowed record %+v", rec)
		}
		if rec.Protocol == egress.ProtoConnect && (rec.SNI != "allowed.test" || rec.Port != uint16(h.TLSPort)) {
			t.Fatalf("CONNECT record %+v", rec)
		}
		if rec.Protocol == egress.ProtoHTTP && rec.Port != uint16(h.HTTPPort) {
			t.Fatalf("HTTP record %+v", rec)
		}
	}
	denied := recordsFor(r, "denied.test")
	if len(denied) != 3 {
		t.Fatalf("%d records for denied.test, want 3: %+v", len(denied), r.Egress)
	}
	for _, rec := range denied {
		if rec.Verdict != verdict.Deny || rec.Code != verdict.EgressDomainNotAllowed || rec.Reason == "" || rec.Addr != "" {
			t.Fatalf("denied record %+v", rec)
		}
	}
	for i := 1; i < len(r.Egress); i++ {
		if r.Egress[i].Start.Before(r.Egress[i-1].Start) {
			t.Fatalf("records out of order: %+v", r.Egress)
		}
	}
	if got := h.Hits.Load(); got != 4 {
		t.Fatalf("the test host answered %d requests, want 4", got)
	}
}

// TestProxyModeBypassFails: with the proxy variables in place or not,
// nothing but the proxy leaves the namespace: a direct connection to the
// test host (no route), the host's loopback services (the command's
// 127.0.0.1 is its own), a UDP DNS query, AF_UNIX, raw and netlink
// sockets, and a server of the command's own all fail, and the test host
// sees none of it.
func TestProxyModeBypassFails(t *testing.T) {
	requireTool(t, "/usr/bin/curl")
	h := egresstest.NewHost(t)
	tier, _ := proxyTier(t, h, sandbox.Options{})
	fx := newFixture(t)
	hostLo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostLo.Close()
	var loHits atomic.Int64
	go func() {
		for {
			c, err := hostLo.Accept()
			if err != nil {
				return
			}
			loHits.Add(1)
			c.Close()
		}
	}()
	hostLoPort := strconv.Itoa(hostLo.Addr().(*net.TCPAddr).Port)
	addr, tlsPort := h.Addr.String(), strconv.Itoa(h.TLSPort)
	sock := nr(t, "socket")
	cmd := strings.Join([]string{
		"echo direct; " + fx.py("tcp", addr, tlsPort),
		"echo direct-proxy-port; " + fx.py("tcp", addr, "3128"),
		"echo host-loopback; " + fx.py("tcp", "127.0.0.1", hostLoPort),
		"echo udp-dns; " + fx.py("udp", addr, "53"),
		"echo unix; " + fx.py("unix", "@ironvise-test"),
		// socket(AF_INET, SOCK_RAW, IPPROTO_ICMP), socket(AF_PACKET,
		// SOCK_RAW, 0), socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE).
		"echo raw; " + fx.py("syscall", sock, "2", "3", "1"),
		"echo packet; " + fx.py("syscall", sock, "17", "3", "0"),
		"echo netlink; " + fx.py("syscall", sock, "16", "3", "0"),
		"echo listen; " + fx.py("listen", "8080"),
		"echo no-proxy-vars; env -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u http_proxy -u https_proxy -u all_proxy curl -sS --max-time 10 -k https://allowed.test:" + tlsPort + "/; echo rc=$?",
		"echo resolve; curl -sS --max-time 10 --noproxy '*' -k --resolve allowed.test:" + tlsPort + ":" + addr + " https://allowed.test:" + tlsPort + "/; echo rc=$?",
		// Neither the listener nor the socket it was handed over on
		// reached the command: only stdin, stdout, stderr and listdir's
		// own descriptor are open.
		`python3 -c 'import os; print("fds", sorted(os.listdir("/proc/self/fd")))'`,
		"echo end",
	}, "\n")
	r := run(t, tier, fx, cmd, inProxyMode(proxyRules(t, h)))
	out := r.Stdout + r.Stderr
	if !strings.Contains(out, "end") {
		t.Fatalf("the command did not finish:\n%s", r.Observation())
	}
	if strings.Contains(out, "OK") || strings.Contains(out, "rc=0") || strings.Contains(out, "hello from the test host") {
		t.Fatalf("a bypass succeeded:\n%s", r.Observation())
	}
	for _, want := range []string{"direct\nERR", "direct-proxy-port\nERR 101 ENETUNREACH", "host-loopback\nERR", "udp-dns\nERR 1 EPERM",
		"unix\nERR 1 EPERM", "raw\nERR 1 EPERM", "packet\nERR 1 EPERM", "netlink\nERR 1 EPERM", "listen\nERR 1 EPERM", "fds ['0', '1', '2', '3']"} {
		contains(t, r, want)
	}
	if h.Hits.Load() != 0 || loHits.Load() != 0 {
		t.Fatalf("the test host answered %d requests, the host's loopback service %d", h.Hits.Load(), loHits.Load())
	}
	t.Logf("bypass attempts:\n%s", out)
	if len(r.Egress) != 0 {
		t.Fatalf("records without a connection to the proxy: %+v", r.Egress)
	}

	// Mode none on the same tier, as before: no IP socket at all, no
	// proxy variables, no records.
	r = run(t, tier, fx, "env | grep -ci _proxy; "+fx.py("tcp", "127.0.0.1", "3128"))
	contains(t, r, "0\nERR 1 EPERM")
	if r.Enforced.Network != "none" || r.Egress != nil {
		t.Fatalf("mode none: network %q, records %+v", r.Enforced.Network, r.Egress)
	}
}

// TestProxyModeRefusals: a TLS ClientHello for another name than the
// CONNECT host, a name resolving to the metadata address and an IP-literal
// target are refused and recorded; the metadata address is never dialled.
func TestProxyModeRefusals(t *testing.T) {
	requireTool(t, "/usr/bin/curl")
	h := egresstest.NewHost(t)
	tier, _ := proxyTier(t, h, sandbox.Options{})
	fx := newFixture(t)
	writeFile(t, fx.ws, "ca.pem", string(h.CAPEM))
	tlsPort := strconv.Itoa(h.TLSPort)
	cmd := `python3 -c '
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
s.sendall(b"CONNECT allowed.test:` + tlsPort + ` HTTP/1.1\r\nHost: allowed.test:` + tlsPort + `\r\n\r\n")
print("connect:", s.recv(4096).split(b"\r\n")[0].decode())
ctx = ssl.create_default_context(cafile="ca.pem")
try:
    c = ctx.wrap_socket(s, server_hostname="denied.test")
    c.sendall(b"GET / HTTP/1.0\r\nHost: denied.test\r\n\r\n"); print("SNI-MISMATCH-PASSED", c.recv(4096))
except Exception as e:
    print("sni refused:", type(e).__name__)
'
curl -sS --max-time 20 http://meta.test/latest/meta-data/; echo "meta rc=$?"
curl -sS --max-time 20 http://169.254.169.254/latest/meta-data/; echo "literal rc=$?"`
	r := run(t, tier, fx, cmd, inProxyMode(proxyRules(t, h)))
	contains(t, r, "connect: HTTP/1.1 200")
	contains(t, r, "sni refused:")
	contains(t, r, "ironvise egress: egress_addr_blocked")
	contains(t, r, "ironvise egress: egress_ip_literal")
	if strings.Contains(r.Stdout, "PASSED") || h.Hits.Load() != 0 {
		t.Fatalf("the mismatched ClientHello got through (%d requests answered):\n%s", h.Hits.Load(), r.Observation())
	}
	want := map[verdict.Code]string{verdict.EgressSNIMismatch: "allowed.test", verdict.EgressAddrBlocked: "meta.test", verdict.EgressIPLiteral: "169.254.169.254"}
	if len(r.Egress) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(r.Egress), len(want), r.Egress)
	}
	for _, rec := range r.Egress {
		host, ok := want[rec.Code]
		if !ok || rec.Host != host || rec.Verdict != verdict.Deny || rec.Reason == "" {
			t.Fatalf("record %+v", rec)
		}
		if rec.Code != verdict.EgressSNIMismatch && rec.Addr != "" {
			t.Fatalf("a refused address was dialled: %+v", rec)
		}
		if rec.Code == verdict.EgressSNIMismatch && rec.SNI != "denied.test" {
			t.Fatalf("SNI mismatch record %+v", rec)
		}
	}
}

// TestProxyModeLeftoverChildren: the run ends when the command does, even
// with a child holding a tunnel open, and that tunnel's record is in the
// result.
func TestProxyModeLeftoverChildren(t *testing.T) {
	h := egresstest.NewHost(t)
	tier, _ := proxyTier(t, h, sandbox.Options{})
	fx := newFixture(t)
	tlsPort := strconv.Itoa(h.TLSPort)
	cmd := `python3 -c '
import socket, time, os
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
s.sendall(b"CONNECT allowed.test:` + tlsPort + ` HTTP/1.1\r\n\r\n")
print("connect:", s.recv(4096).split(b"\r\n")[0].decode(), flush=True)
if os.fork() == 0:
    time.sleep(600)
' ; echo parent-done`
	r := run(t, tier, fx, cmd, inProxyMode(proxyRules(t, h)))
	contains(t, r, "connect: HTTP/1.1 200")
	contains(t, r, "parent-done")
	if len(r.Egress) != 1 || r.Egress[0].Host != "allowed.test" {
		t.Fatalf("records %+v", r.Egress)
	}
}

// TestProxyModeContainerModeAborts: container mode has no network
// namespace to confine the command to the proxy: the run fails closed.
func TestProxyModeContainerModeAborts(t *testing.T) {
	requireSandbox(t)
	tier := newTestTier(t, sandbox.Options{ContainerMode: true})
	fx := newFixture(t)
	marker := filepath.Join(fx.out, "ran")
	r := tier.Run(context.Background(), sandbox.Request{Command: "touch " + marker, Workspace: fx.ws, Timeout: 30 * time.Second,
		Egress: egress.NewRules(nil, nil)})
	if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, "container mode") || !strings.Contains(r.Reason, "fix: set ECTO_SANDBOX_NETWORK=none") {
		t.Fatalf("status %s, reason %q", r.Status, r.Reason)
	}
	absent(t, marker)
}

// TestProxyModeOptedInLoopback: the proxy dials from IronVise's namespace,
// so a service on IronVise's own loopback is reachable through it when
// ECTO_SANDBOX_EGRESS_ALLOW_CIDRS opts in to 127.0.0.0/8, and only then;
// the command's own 127.0.0.1 never reaches it. It needs no root (the
// unprivileged run of TestUnprivileged repeats it in a user namespace).
func TestProxyModeOptedInLoopback(t *testing.T) {
	testProxyModeOptedInLoopback(t, sandbox.Options{})
}

func testProxyModeOptedInLoopback(t *testing.T, opts sandbox.Options) {
	requireTool(t, "/usr/bin/curl")
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "hello from IronVise's loopback %s\n", r.URL.Path)
	}))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	opts.Egress.Resolver = &tableResolver{table: map[string][]netip.Addr{"svc.test": {netip.MustParseAddr("127.0.0.1")}}}
	tier := newTestTier(t, opts)
	fx := newFixture(t)
	d, _ := egress.ParseDomains("svc.test")
	optIn := egress.NewRules(d, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	cmd := "curl -sS --max-time 20 http://svc.test:" + port + "/through-proxy; echo rc=$?; " + fx.py("tcp", "127.0.0.1", port)
	r := run(t, tier, fx, cmd, inProxyMode(optIn))
	contains(t, r, "hello from IronVise's loopback /through-proxy\nrc=0\nERR")
	if r.Enforced.Network != "proxy" || len(r.Egress) != 1 || r.Egress[0].Verdict != verdict.Allow || !strings.Contains(r.Egress[0].Rule, "cidr:127.0.0.0/8") {
		t.Fatalf("network %q, records %+v", r.Enforced.Network, r.Egress)
	}
	// Without the opt-in, the loopback address is refused.
	r = run(t, tier, fx, "curl -sS --max-time 20 http://svc.test:"+port+"/refused; echo rc=$?", inProxyMode(egress.NewRules(d, nil)))
	contains(t, r, "ironvise egress: egress_addr_blocked")
	if hits.Load() != 1 || len(r.Egress) != 1 || r.Egress[0].Code != verdict.EgressAddrBlocked {
		t.Fatalf("%d requests answered, records %+v", hits.Load(), r.Egress)
	}
}

// TestProxyModeVerification: the launcher's read-back holds in proxy mode
// too: a launcher left in IronVise's network namespace, or a profile that
// lets UDP through, aborts the run before the command runs; a good run
// records the same verified list as mode none.
func TestProxyModeVerification(t *testing.T) {
	requireSandbox(t)
	rules := egress.NewRules(nil, nil)
	udpProfile, err := seccomp.BuildHTTPSClient(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		set  func(*Tier)
		want string
	}{
		{"host network namespace", func(t *Tier) { t.noNetNS = true }, "want only lo"},
		{"a profile allowing UDP", func(t *Tier) { t.proxySeccomp = func() (*seccomp.Profile, error) { return udpProfile, nil } }, "SOCK_DGRAM) succeeded under the proxy-mode seccomp profile"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tier := newTestTier(t, sandbox.Options{})
			tc.set(tier)
			fx := newFixture(t)
			r := tier.Run(context.Background(), sandbox.Request{Command: "echo RAN", Workspace: fx.ws, Timeout: 20 * time.Second, Egress: rules})
			if r.Status != sandbox.StatusAborted || strings.Contains(r.Stdout, "RAN") || !strings.Contains(r.Reason, tc.want) {
				t.Fatalf("status %s, reason %q; want aborted before exec: %s", r.Status, r.Reason, r.Observation())
			}
			t.Logf("aborted: %s", r.Reason)
		})
	}
	tier := newTestTier(t, sandbox.Options{})
	r := run(t, tier, newFixture(t), "true", inProxyMode(rules))
	want := []string{launch.VerifiedSeccomp, launch.VerifiedNoNewPrivs, launch.VerifiedCaps, launch.VerifiedLandlock, launch.VerifiedNetwork}
	if strings.Join(r.Enforced.Verified, ",") != strings.Join(want, ",") {
		t.Fatalf("verified %v; want %v", r.Enforced.Verified, want)
	}
	none := run(t, tier, newFixture(t), "true")
	if r.Enforced.SeccompProfileSHA256 == none.Enforced.SeccompProfileSHA256 || none.Enforced.SeccompProfileSHA256 != tier.seccomp.SHA256 ||
		r.Enforced.SeccompProfileSHA256 != proxyProfile(t, tier).SHA256 {
		t.Fatalf("profile hashes: proxy %s, none %s", r.Enforced.SeccompProfileSHA256, none.Enforced.SeccompProfileSHA256)
	}
}

// proxyProfile is the tier's proxy-mode seccomp profile.
func proxyProfile(t *testing.T, tier *Tier) *seccomp.Profile {
	t.Helper()
	p, err := tier.proxySeccomp()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
