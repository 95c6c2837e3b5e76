package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/verdict"
)

const loopOptIn = "127.0.0.0/8"

func checkRecord(t *testing.T, r Record, proto, host string, d verdict.Decision, code verdict.Code) {
	t.Helper()
	if r.Protocol != proto || r.Host != host || r.Verdict != d || r.Code != code {
		t.Errorf("record %+v: want protocol %s host %s verdict %s code %s", r, proto, host, d, code)
	}
	if r.Start.IsZero() || r.Reason == "" || r.Port == 0 {
		t.Errorf("record %+v lacks start, reason or port", r)
	}
	if d == verdict.Allow && (r.Addr == "" || r.BytesUp == 0 || r.BytesDown == 0 || r.Rule == "") {
		t.Errorf("allowed record %+v lacks address, bytes or rule", r)
	}
	if d == verdict.Deny && code != verdict.EgressCapBytes && code != verdict.EgressCapDuration && r.BytesDown != 0 {
		t.Errorf("refused record %+v moved bytes", r)
	}
}

func TestAllowedHostThroughEveryProtocol(t *testing.T) {
	e := newEnv(t, envOpts{cidrs: loopOptIn})

	code, body, err := e.get("http://allowed.test:" + port(e.plain) + "/x")
	if err != nil || code != 200 || body != "hello allowed.test:"+port(e.plain) {
		t.Fatalf("plain HTTP: %d %q %v", code, body, err)
	}
	r := e.record()
	checkRecord(t, r, ProtoHTTP, "allowed.test", verdict.Allow, verdict.OK)
	if r.Rule != "allowed.test; cidr:127.0.0.0/8" || r.Addr != "127.0.0.1:"+port(e.plain) {
		t.Errorf("plain HTTP record rule %q addr %q", r.Rule, r.Addr)
	}

	code, body, err = e.get("https://Allowed.Test:" + port(e.tls) + "/")
	if err != nil || code != 200 || !strings.HasPrefix(strings.ToLower(body), "hello allowed.test") {
		t.Fatalf("CONNECT: %d %q %v", code, body, err)
	}
	r = e.record()
	checkRecord(t, r, ProtoConnect, "allowed.test", verdict.Allow, verdict.OK)
	if !strings.EqualFold(r.SNI, "allowed.test") {
		t.Errorf("CONNECT record SNI %q", r.SNI)
	}

	p, _ := strconv.Atoi(port(e.tls))
	c, rep := socks5(t, e.proxy, 1, "allowed.test.", uint16(p))
	if rep != 0 {
		t.Fatalf("SOCKS5 reply %d", rep)
	}
	if body, err := httpsOver(c, "allowed.test", e.pool); err != nil || !strings.HasPrefix(body, "hello") {
		t.Fatalf("SOCKS5: %q %v", body, err)
	}
	c.Close()
	r = e.record()
	checkRecord(t, r, ProtoSOCKS5, "allowed.test", verdict.Allow, verdict.OK)

	// Every connection resolved the name again.
	if got := e.resolver.looked(); len(got) != 3 {
		t.Errorf("lookups %q, want one per connection", got)
	}
	// The record is the ledger payload: snake_case JSON.
	b, _ := json.Marshal(r)
	mustContain(t, "record JSON", string(b), `"bytes_up":`, `"bytes_down":`, `"duration_ms":`, `"sni":"allowed.test"`, `"verdict":"allow"`, `"protocol":"socks5"`)
}

func TestCurlThroughProxy(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed; the curl part of the proxy test is skipped")
	}
	e := newEnv(t, envOpts{cidrs: loopOptIn})
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("curl", append([]string{"-sS", "--max-time", "10", "--cacert", e.caFile}, args...)...).CombinedOutput()
		if err != nil {
			t.Errorf("curl %q: %v: %s", args, err, out)
		}
		return string(out)
	}
	tlsURL := "https://allowed.test:" + port(e.tls) + "/"
	mustContain(t, "curl socks5h", run("--proxy", "socks5h://"+e.proxy, tlsURL), "hello allowed.test")
	checkRecord(t, e.record(), ProtoSOCKS5, "allowed.test", verdict.Allow, verdict.OK)
	mustContain(t, "curl -x https", run("-x", "http://"+e.proxy, tlsURL), "hello allowed.test")
	checkRecord(t, e.record(), ProtoConnect, "allowed.test", verdict.Allow, verdict.OK)
	mustContain(t, "curl -x http", run("-x", "http://"+e.proxy, "http://allowed.test:"+port(e.plain)+"/"), "hello allowed.test")
	checkRecord(t, e.record(), ProtoHTTP, "allowed.test", verdict.Allow, verdict.OK)
	// A refused host: curl shows the reason.
	out, _ := exec.Command("curl", "-sS", "-x", "http://"+e.proxy, "http://denied.test/").CombinedOutput()
	mustContain(t, "curl refused", string(out), "egress_domain_not_allowed", "denied.test")
	checkRecord(t, e.record(), ProtoHTTP, "denied.test", verdict.Deny, verdict.EgressDomainNotAllowed)
}

func TestHostOffTheListRefused(t *testing.T) {
	e := newEnv(t, envOpts{cidrs: loopOptIn, table: map[string][]netip.Addr{"denied.test": addrs("127.0.0.1")}})
	code, body, err := e.get("http://denied.test:" + port(e.plain) + "/")
	if err != nil || code != 403 {
		t.Fatalf("plain HTTP: %d %v", code, err)
	}
	mustContain(t, "403 body", body, "egress_domain_not_allowed", "denied.test")
	checkRecord(t, e.record(), ProtoHTTP, "denied.test", verdict.Deny, verdict.EgressDomainNotAllowed)

	_, _, code, body = e.connect("denied.test:" + port(e.tls))
	if code != 403 {
		t.Fatalf("CONNECT status %d", code)
	}
	mustContain(t, "CONNECT 403 body", body, "egress_domain_not_allowed")
	checkRecord(t, e.record(), ProtoConnect, "denied.test", verdict.Deny, verdict.EgressDomainNotAllowed)

	p, _ := strconv.Atoi(port(e.tls))
	if _, rep := socks5(t, e.proxy, 1, "denied.test", uint16(p)); rep != socksNotAllowed {
		t.Fatalf("SOCKS5 reply %d, want %d", rep, socksNotAllowed)
	}
	checkRecord(t, e.record(), ProtoSOCKS5, "denied.test", verdict.Deny, verdict.EgressDomainNotAllowed)
	// A refused name is never looked up.
	if got := e.resolver.looked(); len(got) != 0 {
		t.Errorf("refused names were resolved: %q", got)
	}
}

func TestTunnelNeedsMatchingSNI(t *testing.T) {
	e := newEnv(t, envOpts{cidrs: loopOptIn})
	target := "allowed.test:" + port(e.tls)
	for _, tc := range []struct {
		name, sni string
		code      verdict.Code
	}{
		{"mismatch", "other.test", verdict.EgressSNIMismatch},
		{"missing", "", verdict.EgressSNIMismatch},
	} {
		c, _, status, _ := e.connect(target)
		if status != 200 {
			t.Fatalf("%s: CONNECT status %d", tc.name, status)
		}
		tc2 := tls.Client(c, &tls.Config{ServerName: tc.sni, InsecureSkipVerify: true})
		tc2.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tc2.Handshake(); err == nil {
			t.Errorf("%s: the handshake with SNI %q succeeded", tc.name, tc.sni)
		}
		r := e.record()
		checkRecord(t, r, ProtoConnect, "allowed.test", verdict.Deny, tc.code)
		if r.SNI != tc.sni {
			t.Errorf("%s: record SNI %q", tc.name, r.SNI)
		}
	}
	// Plain HTTP inside a tunnel is not TLS.
	c, br, _, _ := e.connect("allowed.test:" + port(e.plain))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
	if b, _ := io.ReadAll(br); len(b) != 0 {
		t.Errorf("non-TLS tunnel got %q", b)
	}
	checkRecord(t, e.record(), ProtoConnect, "allowed.test", verdict.Deny, verdict.EgressNotTLS)
	// SOCKS5 too.
	p, _ := strconv.Atoi(port(e.tls))
	sc, rep := socks5(t, e.proxy, 1, "allowed.test", uint16(p))
	if rep != 0 {
		t.Fatalf("SOCKS5 reply %d", rep)
	}
	if _, err := httpsOver(sc, "other.test", e.pool); err == nil {
		t.Error("SOCKS5 with another SNI succeeded")
	}
	checkRecord(t, e.record(), ProtoSOCKS5, "allowed.test", verdict.Deny, verdict.EgressSNIMismatch)
}

func TestBlockedAddressesRefusedEvenWhenListed(t *testing.T) {
	for _, cidrs := range []string{loopOptIn, ""} {
		e := newEnv(t, envOpts{cidrs: cidrs})
		for _, host := range []string{"meta.test", "mapped.test", "nat64.test", "mixed.test"} {
			_, _, code, body := e.connect(host + ":443")
			if code != 403 {
				t.Errorf("%s (opt-in %q): CONNECT status %d", host, cidrs, code)
			}
			mustContain(t, host+" body", body, "egress_addr_blocked", "resolves to a refused address")
			if host != "mixed.test" || cidrs != "" {
				mustContain(t, host+" body", body, "169.254.169.254")
			}
			checkRecord(t, e.record(), ProtoConnect, host, verdict.Deny, verdict.EgressAddrBlocked)
		}
		// An address carrying the metadata address given directly.
		for _, ip := range []string{"::ffff:169.254.169.254", "169.254.169.254", "2002:a9fe:a9fe::"} {
			if _, rep := socks5(t, e.proxy, 1, ip, 80); rep != socksNotAllowed {
				t.Errorf("SOCKS5 to %s: reply %d", ip, rep)
			}
			r := e.record()
			if r.Verdict != verdict.Deny || r.Addr != "" {
				t.Errorf("SOCKS5 to %s: record %+v", ip, r)
			}
		}
	}
}

func TestLoopbackNeedsTheOptIn(t *testing.T) {
	e := newEnv(t, envOpts{})
	code, body, err := e.get("http://allowed.test:" + port(e.plain) + "/")
	if err != nil || code != 403 {
		t.Fatalf("plain HTTP without opt-in: %d %v", code, err)
	}
	mustContain(t, "body", body, "egress_addr_blocked", "127.0.0.0/8", "ECTO_SANDBOX_EGRESS_ALLOW_CIDRS")
	checkRecord(t, e.record(), ProtoHTTP, "allowed.test", verdict.Deny, verdict.EgressAddrBlocked)
	p, _ := strconv.Atoi(port(e.tls))
	if _, rep := socks5(t, e.proxy, 1, "127.0.0.1", uint16(p)); rep != socksNotAllowed {
		t.Errorf("SOCKS5 to 127.0.0.1 without opt-in: reply %d", rep)
	}
	checkRecord(t, e.record(), ProtoSOCKS5, "127.0.0.1", verdict.Deny, verdict.EgressIPLiteral)
}

func TestIPLiteralInsideOptIn(t *testing.T) {
	e := newEnv(t, envOpts{cidrs: loopOptIn})
	p, _ := strconv.Atoi(port(e.tls))
	c, rep := socks5(t, e.proxy, 1, "127.0.0.1", uint16(p))
	if rep != 0 {
		t.Fatalf("SOCKS5 reply %d", rep)
	}
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true}) // no SNI for an IP
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	tc.Close()
	r := e.record()
	checkRecord(t, r, ProtoSOCKS5, "127.0.0.1", verdict.Allow, verdict.OK)
	if r.Rule != "cidr:127.0.0.0/8" {
		t.Errorf("rule %q", r.Rule)
	}
	// A public IP literal is outside the opt-in.
	_, _, code, body := e.connect("93.184.216.34:443")
	if code != 403 {
		t.Errorf("public IP literal: %d", code)
	}
	mustContain(t, "body", body, "egress_ip_literal")
	e.record()
}

func TestSOCKS5Commands(t *testing.T) {
	e := newEnv(t, envOpts{cidrs: loopOptIn})
	for _, cmd := range []byte{2, 3} { // BIND, UDP ASSOCIATE
		if _, rep := socks5(t, e.proxy, cmd, "allowed.test", 443); rep != socksBadCommand {
			t.Errorf("command %d: reply %d, want %d", cmd, rep, socksBadCommand)
		}
		checkRecord(t, e.record(), ProtoSOCKS5, "allowed.test", verdict.Deny, verdict.EgressBadRequest)
	}
	// A client offering only username/password is told no method fits.
	c, err := net.Dial("tcp", e.proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{5, 1, 2})
	b, _ := io.ReadAll(c)
	if !bytes.Equal(b, []byte{5, 0xff}) {
		t.Errorf("no acceptable method: got %x", b)
	}
	if r := e.record(); r.Code != verdict.EgressBadRequest {
		t.Errorf("record %+v", r)
	}
	if got := e.resolver.looked(); len(got) != 0 {
		t.Errorf("lookups %q", got)
	}
}

func TestConnectionCap(t *testing.T) {
	e := newEnv(t, envOpts{cidrs: loopOptIn, limits: Limits{MaxConnections: 2}})
	u := "http://allowed.test:" + port(e.plain) + "/"
	for i := range 2 {
		if code, _, err := e.get(u); err != nil || code != 200 {
			t.Fatalf("request %d: %d %v", i, code, err)
		}
		e.record()
	}
	code, body, err := e.get(u)
	if err != nil || code != 403 {
		t.Fatalf("third request: %d %v", code, err)
	}
	mustContain(t, "body", body, "egress_cap_connections")
	checkRecord(t, e.record(), ProtoHTTP, "allowed.test", verdict.Deny, verdict.EgressCapConnections)
}

func TestByteCaps(t *testing.T) {
	big := strings.Repeat("x", 200_000)
	handler := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, big)
	}
	e := newEnv(t, envOpts{cidrs: loopOptIn, handler: handler, limits: Limits{MaxBytesDown: 50_000, MaxBytesUp: 50_000}})
	_, body, _ := e.get("https://allowed.test:" + port(e.tls) + "/")
	if len(body) >= len(big) {
		t.Errorf("the whole body (%d bytes) went through a 50,000-byte cap", len(body))
	}
	r := e.record()
	checkRecord(t, r, ProtoConnect, "allowed.test", verdict.Deny, verdict.EgressCapBytes)
	if r.BytesDown > 50_000 {
		t.Errorf("%d bytes down through a 50,000-byte cap", r.BytesDown)
	}
	mustContain(t, "reason", r.Reason, "received more than 50000")

	e2 := newEnv(t, envOpts{cidrs: loopOptIn, limits: Limits{MaxBytesUp: 50_000}})
	resp, err := e2.client().Post("http://allowed.test:"+port(e2.plain)+"/", "text/plain", strings.NewReader(big))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("a 200,000-byte upload went through a 50,000-byte cap")
		}
	}
	r = e2.record()
	checkRecord(t, r, ProtoHTTP, "allowed.test", verdict.Deny, verdict.EgressCapBytes)
	if r.BytesUp > 50_000 {
		t.Errorf("%d bytes up through a 50,000-byte cap", r.BytesUp)
	}
}

func TestDurationCap(t *testing.T) {
	slow := func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	e := newEnv(t, envOpts{cidrs: loopOptIn, handler: slow, limits: Limits{MaxConnDuration: 300 * time.Millisecond}})
	start := time.Now()
	e.get("http://allowed.test:" + port(e.plain) + "/")
	r := e.record()
	checkRecord(t, r, ProtoHTTP, "allowed.test", verdict.Deny, verdict.EgressCapDuration)
	if d := time.Since(start); d > 3*time.Second || r.DurationMS < 250 {
		t.Errorf("took %s, record %d ms; want about 300 ms", d, r.DurationMS)
	}

	// The command's overall limit ends a connection that has per-connection time left.
	e2 := newEnv(t, envOpts{cidrs: loopOptIn, handler: slow, limits: Limits{MaxDuration: 400 * time.Millisecond}})
	e2.get("https://allowed.test:" + port(e2.tls) + "/")
	checkRecord(t, e2.record(), ProtoConnect, "allowed.test", verdict.Deny, verdict.EgressCapDuration)
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, envOpts{cidrs: loopOptIn})
	for _, req := range []string{
		"CONNECT allowed.test HTTP/1.1\r\n\r\n",
		"CONNECT allowed.test:0 HTTP/1.1\r\n\r\n",
		"GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"garbage\r\n\r\n",
	} {
		c, err := net.Dial("tcp", e.proxy)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, req)
		b, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(b), "HTTP/1.1 400") {
			t.Errorf("%q: got %q", req, b)
		}
		if r := e.record(); r.Verdict != verdict.Deny || r.Code != verdict.EgressBadRequest {
			t.Errorf("%q: record %+v", req, r)
		}
	}
}

func TestPlainHTTPHostHeaderCannotRedirect(t *testing.T) {
	e := newEnv(t, envOpts{cidrs: loopOptIn, table: map[string][]netip.Addr{"denied.test": addrs("127.0.0.1")}})
	raw := func(req string) string {
		c, err := net.Dial("tcp", e.proxy)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, req)
		b, _ := io.ReadAll(c)
		return string(b)
	}
	p := port(e.plain)
	// The URI's host is checked and is the one the server is told.
	out := raw("GET http://allowed.test:" + p + "/ HTTP/1.1\r\nHost: denied.test:" + p + "\r\n\r\n")
	mustContain(t, "response", out, "200 OK", "hello allowed.test:"+p)
	checkRecord(t, e.record(), ProtoHTTP, "allowed.test", verdict.Allow, verdict.OK)
	out = raw("GET http://denied.test:" + p + "/ HTTP/1.1\r\nHost: allowed.test:" + p + "\r\n\r\n")
	mustContain(t, "response", out, "403 Forbidden", "egress_domain_not_allowed")
	checkRecord(t, e.record(), ProtoHTTP, "denied.test", verdict.Deny, verdict.EgressDomainNotAllowed)
	// An origin-form request is decided by its Host header.
	out = raw("GET / HTTP/1.1\r\nHost: denied.test:" + p + "\r\n\r\n")
	mustContain(t, "response", out, "403 Forbidden")
	e.record()
}

func TestServeStopsOpenConnections(t *testing.T) {
	d, _ := ParseDomains("allowed.test")
	c, _ := ParseCIDRs(loopOptIn)
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() { // a server that accepts and never answers
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	recs := make(chan Record, 1)
	p, err := New(Config{Rules: NewRules(d, c), Resolver: &mapResolver{table: map[string][]netip.Addr{"allowed.test": addrs("127.0.0.1")}},
		OnConnection: func(r Record) { recs <- r }})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, l, NewBudget(Limits{})) }()
	_, sp, _ := net.SplitHostPort(srv.Addr().String())
	pp, _ := strconv.Atoi(sp)
	tc, rep := socks5(t, l.Addr().String(), 1, "allowed.test", uint16(pp))
	if rep != 0 {
		t.Fatalf("reply %d", rep)
	}
	tc.Write(realClientHello(t, "allowed.test"))
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	r := <-recs
	if r.Protocol != ProtoSOCKS5 || r.SNI != "allowed.test" || r.BytesUp == 0 {
		t.Errorf("record %+v", r)
	}
	if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
		t.Error("the listener still accepts")
	}
}
