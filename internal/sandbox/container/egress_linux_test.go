//go:build linux

package container

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
	"github.com/ironvise/ironvise/internal/verdict"
)

// The test host of the proxy-mode tests: an address on a veth pair the test
// creates on the host, reachable from IronVise's namespace and, with a
// network, from a container; nothing real is contacted.
const (
	testHostLink = "ivctr0"
	testHostPeer = "ivctr1"
	testHostIP   = "10.232.7.1"
)

// testHost creates the test host's address and removes it at cleanup. It
// skips without the privilege to create links (the tests' Podman is rootful,
// so that is the same condition as proxy mode's).
func testHost(t *testing.T) netip.Addr {
	t.Helper()
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	_ = ip("link", "del", testHostLink) // a leftover of a killed run
	if err := ip("link", "add", testHostLink, "type", "veth", "peer", "name", testHostPeer); err != nil {
		t.Skipf("cannot create the test host's link (root and the veth module are needed): %v", err)
	}
	t.Cleanup(func() {
		if err := ip("link", "del", testHostLink); err != nil {
			t.Errorf("remove the test host's link: %v", err)
		}
	})
	for _, args := range [][]string{
		{"addr", "add", testHostIP + "/32", "dev", testHostLink},
		{"link", "set", testHostLink, "up"},
		{"link", "set", testHostPeer, "up"},
	} {
		if err := ip(args...); err != nil {
			t.Fatal(err)
		}
	}
	return netip.MustParseAddr(testHostIP)
}

// tableResolver is the proxy's resolver in the tests: an interface fake,
// because the test names must resolve to the test host without a DNS
// server, and the real resolver would ask the host's.
type tableResolver map[string][]netip.Addr

func (r tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// serveHTTP serves body on addr and counts requests by path.
func serveHTTP(t *testing.T, addr, body string) (port int, hits func(path string) int64) {
	t.Helper()
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	// Read-only after this; the counters are atomic.
	counts := map[string]*atomic.Int64{}
	for _, p := range []string{"/allowed", "/denied", "/raw", "/direct", "/loopback"} {
		counts[p] = new(atomic.Int64)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := counts[r.URL.Path]; ok {
			c.Add(1)
		}
		io.WriteString(w, body)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port, func(p string) int64 { return counts[p].Load() }
}

// TestPodmanProxyMode runs a command in proxy mode with real Podman: busybox
// wget reaches the allowed host through the proxy at 127.0.0.1:3128 in the
// container's own namespace; a host off the list gets the proxy's refusal;
// nothing bypasses the proxy (the test host directly, the host's loopback,
// UDP); only TCP client sockets are added to the seccomp profile; the
// records are in Result.Egress.
func TestPodmanProxyMode(t *testing.T) {
	image := testImage(t)
	ip := testHost(t)
	port, hits := serveHTTP(t, ip.String()+":0", "hello from the test host\n")
	// A service on the host's loopback: a container sharing the host's
	// network, or its loopback, could reach it.
	lport, lhits := serveHTTP(t, "127.0.0.1:0", "host loopback\n")
	// Podman copies its own proxy variables into containers unless told
	// not to; these must not arrive.
	t.Setenv("FTP_PROXY", "http://user:host-secret@proxy.invalid:8080")
	t.Setenv("HTTP_PROXY", "http://user:host-secret@proxy.invalid:8080")

	tier := newPodman(t, func(o *sandbox.Options) {
		o.DockerImage = image
		o.Egress.Resolver = tableResolver{"allowed.test": {ip}, "denied.test": {ip}}
	})
	ws := workspace(t)
	buildSysprobe(t, ws)
	rules := egress.NewRules([]string{"allowed.test"}, []netip.Prefix{netip.PrefixFrom(ip, 32)})
	probes := []string{"socket-inet", "socket-inet6", "socket-inet-tcp-nonblock", "connect",
		"socket-inet-signext", "socket-inet-udp", "socket-inet6-udp", "socket-inet-mptcp", "socket-inet-sctp",
		"socket-netlink", "socket-unix", "socketpair-dgram", "bind", "listen", "accept4", "unshare-net", "setns"}
	// No wget -T: busybox 1.35's wget dies of a NULL dereference with it
	// when the connection fails.
	cmd := fmt.Sprintf(`
echo "links: $(ls /sys/class/net | tr '\n' ' ')"
env | grep -i proxy | sort
wget -q -O - http://allowed.test:%[1]d/allowed && echo ALLOWED-FETCHED
wget -q -O - http://denied.test:%[1]d/denied || echo DENIED-REFUSED
printf 'GET http://denied.test:%[1]d/raw HTTP/1.0\r\nHost: denied.test:%[1]d\r\n\r\n' | nc -w 10 127.0.0.1 3128
wget -Y off -q -O - http://%[2]s:%[1]d/direct && echo DIRECT-FETCHED
nc -w 3 %[2]s %[1]d </dev/null && echo DIRECT-CONNECTED
wget -Y off -q -O - http://127.0.0.1:%[3]d/loopback && echo HOST-LOOPBACK-FETCHED
nslookup allowed.test %[2]s >/dev/null 2>&1 && echo DNS-ANSWERED
./sysprobe %[4]s
true`, port, ip, lport, strings.Join(probes, " "))
	res := run(t, tier, sandbox.Request{Workspace: ws, Command: cmd, Egress: rules})
	wantOK(t, res, 0)
	out := res.Stdout

	if !strings.Contains(out, "links: lo \n") {
		t.Errorf("the container's namespace has other links than lo: %q", out)
	}
	for _, kv := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "ALL_PROXY=http://127.0.0.1:3128",
		"http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "all_proxy=http://127.0.0.1:3128", "NO_PROXY=\n", "no_proxy=\n"} {
		if !strings.Contains(out, kv) {
			t.Errorf("the command's environment lacks %q: %q", kv, out)
		}
	}
	if strings.Contains(out, "host-secret") || strings.Contains(out, "FTP_PROXY") {
		t.Errorf("IronVise's own proxy variables reached the container: %q", out)
	}
	if !strings.Contains(out, "hello from the test host\nALLOWED-FETCHED") || hits("/allowed") != 1 {
		t.Errorf("the allowed host was not reached through the proxy (%d requests): %q %q", hits("/allowed"), out, res.Stderr)
	}
	if !strings.Contains(out, "DENIED-REFUSED") || !strings.Contains(res.Stderr, "403") {
		t.Errorf("wget to the denied host: stdout %q stderr %q; want the proxy's 403", out, res.Stderr)
	}
	if !strings.Contains(out, "HTTP/1.1 403 Forbidden") || !strings.Contains(out, "ironvise egress: "+string(verdict.EgressDomainNotAllowed)+": ") {
		t.Errorf("the proxy's refusal is not in the output: %q", out)
	}
	if hits("/denied") != 0 || hits("/raw") != 0 {
		t.Errorf("the denied requests reached the test host")
	}
	for _, bad := range []string{"DIRECT-FETCHED", "DIRECT-CONNECTED", "HOST-LOOPBACK-FETCHED", "DNS-ANSWERED"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: the proxy was bypassed: %q", bad, out)
		}
	}
	if hits("/direct") != 0 || lhits("/loopback") != 0 {
		t.Errorf("a direct connection reached a host service")
	}
	want := map[string]string{
		"socket-inet": "OK", "socket-inet6": "OK", "socket-inet-tcp-nonblock": "OK", "connect": "ERR EBADF",
		"socket-inet-signext": "ERR EPERM", "socket-inet-udp": "ERR EPERM", "socket-inet6-udp": "ERR EPERM",
		"socket-inet-mptcp": "ERR EPERM", "socket-inet-sctp": "ERR EPERM", "socket-netlink": "ERR EPERM",
		"socket-unix": "ERR EPERM", "socketpair-dgram": "ERR EPERM", "bind": "ERR EPERM", "listen": "ERR EPERM",
		"accept4": "ERR EPERM", "unshare-net": "ERR EPERM", "setns": "ERR EPERM",
	}
	for p, w := range want {
		if !strings.Contains(out, "\n"+p+" "+w+"\n") {
			t.Errorf("probe %s: want %q in %q", p, w, out)
		}
	}

	e := res.Enforced
	oci, err := seccomp.OCIProxyProfile(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	if e == nil || e.Network != "proxy" || e.SeccompProfileSHA256 != oci.SHA256 || !slices.Contains(e.Namespaces, "network") {
		t.Errorf("enforced record %+v; want network proxy and the proxy-mode profile %s", e, oci.SHA256)
	}
	var allowed, denied int
	for _, r := range res.Egress {
		t.Logf("record: %+v", r)
		switch {
		case r.Verdict == verdict.Allow && r.Host == "allowed.test" && r.Port == uint16(port) &&
			r.Addr == netip.AddrPortFrom(ip, uint16(port)).String() && strings.HasPrefix(r.Rule, "allowed.test") && r.BytesDown > 0 && r.Protocol == egress.ProtoHTTP:
			allowed++
		case r.Verdict == verdict.Deny && r.Host == "denied.test" && r.Code == verdict.EgressDomainNotAllowed && r.Addr == "":
			denied++
		default:
			t.Errorf("unexpected record %+v", r)
		}
	}
	if allowed != 1 || denied != 2 || len(res.Egress) != 3 {
		t.Errorf("records: %d allowed, %d denied of %d; want 1, 2 of 3", allowed, denied, len(res.Egress))
	}
}

// TestPodmanProxyModeLeavesModeNoneAlone: a run without Egress next to a
// proxy-mode one still has no proxy, the plain profile and network none.
func TestPodmanProxyModeLeavesModeNoneAlone(t *testing.T) {
	tier := newPodman(t)
	rules := egress.NewRules([]string{"allowed.test"}, nil)
	proxied := run(t, tier, sandbox.Request{Command: "nc -w 2 127.0.0.1 3128 </dev/null && echo PROXY-THERE", Egress: rules})
	wantOK(t, proxied, 0)
	plain := run(t, tier, sandbox.Request{Command: "env | grep -i proxy; nc -w 2 127.0.0.1 3128 </dev/null && echo PROXY-THERE; true"})
	wantOK(t, plain, 0)
	if !strings.Contains(proxied.Stdout, "PROXY-THERE") {
		t.Errorf("proxy mode: the proxy is not listening at 127.0.0.1:3128: %q %q", proxied.Stdout, proxied.Stderr)
	}
	if plain.Stdout != "" || plain.Enforced.Network != "none" || plain.Enforced.SeccompProfileSHA256 != tier.profile.SHA256 || plain.Egress != nil {
		t.Errorf("mode none changed: stdout %q, network %q, profile %s, records %v", plain.Stdout, plain.Enforced.Network, plain.Enforced.SeccompProfileSHA256, plain.Egress)
	}
}

// netnsFDs counts this process's descriptors of network namespaces.
func netnsFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "net:[") {
			n++
		}
	}
	return n
}

// TestPodmanProxyModeTimeoutStopsTheProxy: a command that holds a proxy
// connection open past the timeout is killed; the proxy closes the
// connection, its record is in the result, and the namespace's descriptor
// is released.
func TestPodmanProxyModeTimeoutStopsTheProxy(t *testing.T) {
	tier := newPodman(t)
	before := netnsFDs(t)
	res := run(t, tier, sandbox.Request{Command: "(sleep 120 | nc 127.0.0.1 3128) & echo started; sleep 120", Timeout: 10 * time.Second,
		Egress: egress.NewRules([]string{"allowed.test"}, nil)})
	if res.Status != sandbox.StatusTimeout || !strings.Contains(res.Stdout, "started") {
		t.Fatalf("got %s; want timeout", res.Headline())
	}
	if len(res.Egress) != 1 || res.Egress[0].Verdict != verdict.Deny {
		t.Fatalf("records %+v; want the held connection's, refused", res.Egress)
	}
	if res.Enforced == nil || res.Enforced.Network != "proxy" {
		t.Fatalf("enforced %+v", res.Enforced)
	}
	if after := netnsFDs(t); after != before {
		t.Fatalf("%d network namespace descriptors open after the run; %d before", after, before)
	}
}

// TestPodmanProxyModeRunsAreSeparate: two proxy-mode runs at once each
// have their own namespace and proxy at the same address, their own rules,
// and only their own records.
func TestPodmanProxyModeRunsAreSeparate(t *testing.T) {
	ip := testHost(t)
	port, _ := serveHTTP(t, ip.String()+":0", "hello\n")
	tier := newPodman(t, func(o *sandbox.Options) {
		o.Egress.Resolver = tableResolver{"a.test": {ip}, "b.test": {ip}}
	})
	cidr := []netip.Prefix{netip.PrefixFrom(ip, 32)}
	results := make([]sandbox.Result, 2)
	var wg sync.WaitGroup
	for i, host := range []string{"a.test", "b.test"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := fmt.Sprintf("for h in a.test b.test; do wget -q -O - http://$h:%d/ >/dev/null && echo $h-OK || echo $h-REFUSED; done", port)
			results[i] = tier.Run(context.Background(), sandbox.Request{Command: cmd, Workspace: workspace(t), Egress: egress.NewRules([]string{host}, cidr)})
		}()
	}
	wg.Wait()
	for i, host := range []string{"a.test", "b.test"} {
		res := results[i]
		wantOK(t, res, 0)
		other := map[string]string{"a.test": "b.test", "b.test": "a.test"}[host]
		if !strings.Contains(res.Stdout, host+"-OK") || !strings.Contains(res.Stdout, other+"-REFUSED") {
			t.Errorf("run allowing %s: %q %q", host, res.Stdout, res.Stderr)
		}
		if len(res.Egress) != 2 {
			t.Errorf("run allowing %s: %d records; want its own 2", host, len(res.Egress))
			continue
		}
		for _, r := range res.Egress {
			if (r.Host == host) != (r.Verdict == verdict.Allow) {
				t.Errorf("run allowing %s: record %+v", host, r)
			}
		}
	}
}

// TestPodmanHostProxyVariablesStayOut: Podman copies the proxy variables of
// its own environment into every container unless told not to; IronVise's
// (a proxy URL with credentials here) never reach a command, in either
// mode.
func TestPodmanHostProxyVariablesStayOut(t *testing.T) {
	tier := newPodman(t)
	for _, name := range []string{"HTTP_PROXY", "https_proxy", "FTP_PROXY", "no_proxy"} {
		t.Setenv(name, "http://user:host-secret@proxy.invalid:8080")
	}
	for _, rules := range []*egress.Rules{nil, egress.NewRules(nil, nil)} {
		res := run(t, tier, sandbox.Request{Command: "env", Egress: rules})
		wantOK(t, res, 0)
		if strings.Contains(res.Stdout, "host-secret") || strings.Contains(strings.ToUpper(res.Stdout), "FTP_PROXY") {
			t.Errorf("proxy mode %v: IronVise's proxy variables reached the command: %q", rules != nil, res.Stdout)
		}
	}
}
