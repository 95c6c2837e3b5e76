package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawConn is a client connection from a chosen loopback source address
// (Linux routes all of 127.0.0.0/8 to lo, so each address is a distinct
// peer to the server).
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

func (ts *testServer) dialFrom(src string) *rawConn {
	ts.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		ts.t.Fatalf("dial from %s: %v", src, err)
	}
	ts.t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, br: bufio.NewReader(c)}
}

// get sends one keep-alive GET and reads its answer.
func (c *rawConn) get(t *testing.T, path string) *http.Response {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	res, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// holdIdle opens n keep-alive connections from src, each after one
// answered request, and leaves them idle.
func (ts *testServer) holdIdle(src string, n int) []*rawConn {
	ts.t.Helper()
	out := make([]*rawConn, n)
	for i := range out {
		out[i] = ts.dialFrom(src)
		if res := out[i].get(ts.t, "/healthz"); res.StatusCode != 200 {
			ts.t.Fatalf("connection %d from %s: %d", i, src, res.StatusCode)
		}
	}
	return out
}

// TestConnectionCaps is issue 13 item 2: idle keep-alive connections
// count against a per-address cap (429) and a global cap (503), both
// with Retry-After; other addresses still get through the per-address
// cap, a closed connection frees its place, and event streams count.
func TestConnectionCaps(t *testing.T) {
	ts := startServer(t, tsOptions{env: map[string]string{"ECTO_MAX_CONNECTIONS": "8", "ECTO_MAX_CONNECTIONS_PER_IP": "5"}})
	a := ts.holdIdle("127.0.0.1", 5)
	res := ts.dialFrom("127.0.0.1").get(t, "/healthz")
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("6th connection from one address: %d (Retry-After %q); want 429 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	// Another address is not held back by the first one's cap.
	ts.holdIdle("127.0.0.2", 3)
	res = ts.dialFrom("127.0.0.3").get(t, "/healthz")
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("9th connection overall: %d (Retry-After %q); want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	// Closing one frees its place.
	a[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if res := ts.dialFrom("127.0.0.3").get(t, "/healthz"); res.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed connection did not free its place")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m := ts.call("GET", "/healthz", "", nil); m.status != 503 {
		t.Fatalf("a 9th connection through the ordinary client: %d; want 503", m.status)
	}
}

// TestStreamsCountButHaveNoDeadline: event streams are exempt from the
// idle and body deadlines (they live past both), but count against the
// caps.
func TestStreamsCountButHaveNoDeadline(t *testing.T) {
	ts := startServer(t, tsOptions{env: map[string]string{"ECTO_MAX_CONNECTIONS_PER_IP": "2", "ECTO_IDLE_TIMEOUT_SECS": "1", "ECTO_BODY_TIMEOUT_SECS": "1"}})
	s1 := ts.openStream("/api/stream", adminTok)
	s2 := ts.openStream("/api/stream", adminTok)
	if res := ts.dialFrom("127.0.0.1").get(t, "/healthz"); res.StatusCode != 429 {
		t.Fatalf("a third connection beside two streams: %d; want 429", res.StatusCode)
	}
	time.Sleep(2500 * time.Millisecond) // past both deadlines
	s1.close()
	// The freed place takes a request that appends; the other stream,
	// open for longer than both deadlines, still receives it.
	id := ""
	for deadline := time.Now().Add(5 * time.Second); id == ""; time.Sleep(50 * time.Millisecond) {
		r := ts.call("POST", "/api/sessions", adminTok, map[string]any{"goal": "stream me", "agent_loop": false})
		if r.status == 200 {
			id = r.json(t)["id"].(string)
		} else if time.Now().After(deadline) {
			t.Fatalf("create after a stream closed: %d %s", r.status, r.body)
		}
	}
	for {
		f, ok := s2.next(t, 5*time.Second)
		if !ok {
			t.Fatal("the stream open past the idle and body deadlines got no event")
		}
		if strings.Contains(f.data, id) {
			break
		}
	}
}

// TestSlowBodyCut: a body that trickles in is cut after
// ECTO_BODY_TIMEOUT_SECS with 408 and the connection closed, with or
// without a token (an unauthenticated request's body is drained by
// net/http under the same deadline).
func TestSlowBodyCut(t *testing.T) {
	ts := startServer(t, tsOptions{env: map[string]string{"ECTO_BODY_TIMEOUT_SECS": "1"}})
	for _, tok := range []string{adminTok, ""} {
		c := ts.dialFrom("127.0.0.1")
		auth := ""
		if tok != "" {
			auth = "Authorization: Bearer " + tok + "\r\n"
		}
		start := time.Now()
		fmt.Fprintf(c, "POST /api/sessions HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"goal\":", auth)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(c.br, nil)
		if tok != "" {
			if err != nil || res.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("slow body with a token: %v %v; want 408", res, err)
			}
			io.Copy(io.Discard, res.Body)
		} else if err == nil {
			io.Copy(io.Discard, res.Body)
		}
		// Either way the server closes the connection, within the
		// deadline and a margin, not never.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.br.ReadByte(); err == nil {
			t.Fatalf("token %q: the connection stayed open after the body deadline", tok)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("token %q: the connection was still open after 10 s", tok)
		}
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("token %q: closed after %v", tok, d)
		}
	}
}

// TestIdleConnectionClosed: a keep-alive connection idle for longer than
// ECTO_IDLE_TIMEOUT_SECS is closed by the server.
func TestIdleConnectionClosed(t *testing.T) {
	ts := startServer(t, tsOptions{env: map[string]string{"ECTO_IDLE_TIMEOUT_SECS": "1"}})
	c := ts.holdIdle("127.0.0.1", 1)[0]
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.br.ReadByte(); err == nil {
		t.Fatal("unexpected data on an idle connection")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("an idle connection was still open after 10 s (idle timeout 1 s)")
	}
}
