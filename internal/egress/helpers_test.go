package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/egresstest"
)

// mapResolver resolves from a fixed table and logs every lookup.
type mapResolver struct {
	mu     sync.Mutex
	table  map[string][]netip.Addr
	lookup []string
}

func (m *mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lookup = append(m.lookup, host)
	if a, ok := m.table[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

func (m *mapResolver) looked() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.lookup...)
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// testCA is a self-signed certificate for the given names and a pool
// trusting it.
func testCA(t testing.TB, names ...string) (tls.Certificate, *x509.CertPool, []byte) {
	t.Helper()
	cert, pemBytes := egresstest.Cert(t, names...)
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return cert, pool, pemBytes
}

// env is a proxy on loopback with a plain and a TLS test server that
// the resolver maps "allowed.test" (and others) to.
type env struct {
	t        testing.TB
	proxy    string
	plain    *httptest.Server
	tls      *httptest.Server
	pool     *x509.CertPool
	caFile   string
	resolver *mapResolver
	budget   *Budget
	mu       sync.Mutex
	records  []Record
	recCh    chan Record
}

type envOpts struct {
	domains string
	cidrs   string
	limits  Limits
	table   map[string][]netip.Addr
	handler http.HandlerFunc
}

func hello(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	fmt.Fprintf(w, "hello %s", r.Host)
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	if o.domains == "" {
		o.domains = "allowed.test,meta.test,mapped.test,nat64.test,mixed.test"
	}
	if o.handler == nil {
		o.handler = hello
	}
	cert, pool, pemCert := testCA(t, "allowed.test", "other.test")
	e := &env{t: t, pool: pool, recCh: make(chan Record, 100)}
	quiet := log.New(io.Discard, "", 0) // refused handshakes are expected
	e.plain = httptest.NewUnstartedServer(o.handler)
	e.plain.Config.ErrorLog = quiet
	e.plain.Start()
	e.tls = httptest.NewUnstartedServer(o.handler)
	e.tls.Config.ErrorLog = quiet
	e.tls.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	e.tls.StartTLS()
	t.Cleanup(e.plain.Close)
	t.Cleanup(e.tls.Close)
	e.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(e.caFile, pemCert, 0o600); err != nil {
		t.Fatal(err)
	}
	table := map[string][]netip.Addr{
		"allowed.test": addrs("127.0.0.1"),
		"other.test":   addrs("127.0.0.1"),
		"meta.test":    addrs("169.254.169.254"),
		"mapped.test":  addrs("::ffff:169.254.169.254"),
		"nat64.test":   addrs("64:ff9b::a9fe:a9fe"),
		"mixed.test":   addrs("127.0.0.1", "169.254.169.254"),
	}
	for k, v := range o.table {
		table[k] = v
	}
	e.resolver = &mapResolver{table: table}
	d, err := ParseDomains(o.domains)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCIDRs(o.cidrs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Rules: NewRules(d, c), Resolver: e.resolver, HandshakeTimeout: 2 * time.Second,
		OnConnection: func(r Record) {
			e.mu.Lock()
			e.records = append(e.records, r)
			e.mu.Unlock()
			select { // a benchmark makes more records than anyone reads
			case e.recCh <- r:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.proxy = l.Addr().String()
	e.budget = NewBudget(o.limits)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, l, e.budget) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

// port returns the port of a test server.
func port(s *httptest.Server) string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// record waits for the next connection record.
func (e *env) record() Record {
	e.t.Helper()
	select {
	case r := <-e.recCh:
		return r
	case <-time.After(10 * time.Second):
		e.t.Fatal("no connection record")
		return Record{}
	}
}

// client is an HTTP client using the proxy as an HTTP proxy.
func (e *env) client() *http.Client {
	u, _ := url.Parse("http://" + e.proxy)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: e.pool}, DisableKeepAlives: true,
	}}
}

func (e *env) get(rawURL string) (int, string, error) {
	resp, err := e.client().Get(rawURL)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// connect opens a CONNECT tunnel and returns the connection and status.
func (e *env) connect(target string) (net.Conn, *bufio.Reader, int, string) {
	e.t.Helper()
	c, err := net.Dial("tcp", e.proxy)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		return c, br, resp.StatusCode, "" // the tunnel is open; there is no body
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return c, br, resp.StatusCode, string(b)
}

// socks5 is a minimal SOCKS5 client: no authentication, CONNECT to a
// domain name (atyp 3) or an IP address (1 or 4). It returns the reply
// code.
func socks5(t testing.TB, proxy string, cmd byte, host string, port uint16) (net.Conn, byte) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		t.Fatal(err)
	}
	var sel [2]byte
	if _, err := io.ReadFull(c, sel[:]); err != nil || sel != [2]byte{5, 0} {
		t.Fatalf("method selection %x, %v", sel, err)
	}
	req := []byte{5, cmd, 0}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Is4() {
			req = append(append(req, 1), a.AsSlice()...)
		} else {
			req = append(append(req, 4), a.AsSlice()...)
		}
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, port)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatalf("SOCKS5 reply: %v", err)
	}
	c.SetDeadline(time.Time{})
	return c, rep[1]
}

// httpsOver runs one HTTPS GET over an open tunnel.
func httpsOver(c net.Conn, serverName string, pool *x509.CertPool) (string, error) {
	tc := tls.Client(c, &tls.Config{ServerName: serverName, RootCAs: pool})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		return "", err
	}
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", serverName)
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", errors.New(resp.Status)
	}
	return string(b), err
}

func mustContain(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s %q does not contain %q", what, s, sub)
		}
	}
}
