package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Connection limits (issue 13, item 2). Every accepted connection counts
// until it closes — idle keep-alive connections, requests, event streams
// — once globally and once for its peer address. A connection over
// either cap is answered at once, without reading its request, and
// closed:
//
//   - over the global cap: 503 with Retry-After. The cap stays below the
//     open-file limit (fdlimit.go), so accept keeps working and refusing is
//     cheap however many peers try;
//   - over the per-address cap: 429 with Retry-After. One client cannot
//     take the capacity of all the others (two peers holding 12,000 idle
//     connections each once starved the server).
//
// Trusted proxies count only globally: all their clients share their
// address.

// connRejectLinger bounds how long a refused connection is kept to let
// the client read the answer, and maxLingering how many are kept at once;
// past that a refused connection is simply closed.
const (
	connRejectLinger = time.Second
	maxLingering     = 128
)

// connLimiter counts open connections.
type connLimiter struct {
	max, perIP int
	// exempt reports peers counted only globally (trusted proxies).
	exempt func(netip.Addr) bool

	mu    sync.Mutex
	total int                // guarded by mu
	byIP  map[netip.Addr]int // guarded by mu

	rejectedGlobal, rejectedIP atomic.Int64
	// lingering counts refused connections still being answered.
	lingering atomic.Int64
}

func newConnLimiter(max, perIP int, exempt func(netip.Addr) bool) *connLimiter {
	return &connLimiter{max: max, perIP: perIP, exempt: exempt, byIP: map[netip.Addr]int{}}
}

// admission is acquire's decision.
type admission int

const (
	admitted admission = iota
	overGlobal
	overIP
)

// acquire counts a new connection from ip, unless a cap is reached.
func (c *connLimiter) acquire(ip netip.Addr) admission {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total >= c.max {
		return overGlobal
	}
	counted := ip.IsValid() && !c.exempt(ip)
	if counted && c.byIP[ip] >= c.perIP {
		return overIP
	}
	c.total++
	if counted {
		c.byIP[ip]++
	}
	return admitted
}

// release uncounts a connection acquire admitted.
func (c *connLimiter) release(ip netip.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if ip.IsValid() && !c.exempt(ip) {
		if n := c.byIP[ip] - 1; n > 0 {
			c.byIP[ip] = n
		} else {
			delete(c.byIP, ip)
		}
	}
}

// open returns the number of counted connections.
func (c *connLimiter) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// limitListener applies a connLimiter to the connections a listener
// accepts.
type limitListener struct {
	net.Listener
	lim *connLimiter
	// wg tracks the goroutines that answer refused connections; Server
	// waits for it at shutdown.
	wg *sync.WaitGroup
}

// Accept implements net.Listener: it returns the next admitted connection
// and answers refused ones itself.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := peerAddr(c.RemoteAddr())
		switch l.lim.acquire(ip) {
		case admitted:
			return &limitedConn{Conn: c, lim: l.lim, ip: ip}, nil
		case overGlobal:
			l.lim.rejectedGlobal.Add(1)
			l.refuse(c, "503 Service Unavailable", "the server has reached its connection limit (ECTO_MAX_CONNECTIONS); retry after the Retry-After seconds")
		case overIP:
			l.lim.rejectedIP.Add(1)
			l.refuse(c, "429 Too Many Requests", "this address has reached its connection limit (ECTO_MAX_CONNECTIONS_PER_IP); close idle connections or retry after the Retry-After seconds")
		}
	}
}

// refuse answers a connection over a cap and closes it. The request is
// read first (HTTP clients discard an answer that comes before their
// request), under a short deadline; the connection then lingers briefly,
// draining what the client still sends, so that closing it does not reset
// the answer away before the client reads it. At most maxLingering
// connections are answered at once; past that a refused connection is
// closed unanswered, so a flood cannot turn refusals into a new way to
// hold descriptors.
func (l *limitListener) refuse(c net.Conn, status, msg string) {
	if l.lim.lingering.Add(1) > maxLingering {
		l.lim.lingering.Add(-1)
		c.Close()
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer l.lim.lingering.Add(-1)
		defer c.Close()
		deadline := time.Now().Add(connRejectLinger)
		c.SetDeadline(deadline)
		br := bufio.NewReaderSize(io.LimitReader(c, 64<<10), 4096)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		body := `{"error":` + strconv.Quote(msg) + "}\n"
		resp := "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body
		if _, err := io.WriteString(c, resp); err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		io.Copy(io.Discard, br)
	}()
}

// peerAddr returns the IP of a remote address, unmapped, or the zero Addr.
func peerAddr(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

// limitedConn uncounts itself once when closed.
type limitedConn struct {
	net.Conn
	lim  *connLimiter
	ip   netip.Addr
	once sync.Once
}

// Close implements net.Conn.
func (c *limitedConn) Close() error {
	c.once.Do(func() { c.lim.release(c.ip) })
	return c.Conn.Close()
}
