package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Resolver resolves the names the proxy dials. *net.Resolver implements
// it; tests use a fixed table.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Proxy.
type Config struct {
	// Rules decide hosts and addresses. Required.
	Rules *Rules
	// Resolver resolves names; nil means net.DefaultResolver.
	Resolver Resolver
	// Dial connects to an address that passed the rules; nil means a
	// net.Dialer.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// OnConnection receives one Record per client connection when it
	// ends. It is called from the connection's goroutine and may be
	// called concurrently.
	OnConnection func(Record)
	// HandshakeTimeout bounds reading the proxy request and the
	// ClientHello (default 10 s); DialTimeout bounds resolving and
	// dialling (default 10 s).
	HandshakeTimeout, DialTimeout time.Duration
}

// Proxy is the HTTP and SOCKS5 proxy of one command.
type Proxy struct{ cfg Config }

// New checks cfg and returns a proxy.
func New(cfg Config) (*Proxy, error) {
	if cfg.Rules == nil {
		return nil, errors.New("egress proxy: no rules; build them with NewRules")
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{}).DialContext
	}
	if cfg.OnConnection == nil {
		cfg.OnConnection = func(Record) {}
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	return &Proxy{cfg: cfg}, nil
}

// Serve accepts connections on l, charging them to b, until ctx ends or
// l fails. When ctx ends it closes l and every open connection; it
// returns after every connection's Record was delivered: nil when ctx
// ended, the accept error otherwise.
func (p *Proxy) Serve(ctx context.Context, l net.Listener, b *Budget) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	for {
		c, err := l.Accept()
		if err != nil {
			parentDone := ctx.Err() != nil
			cancel()
			wg.Wait()
			if parentDone {
				return nil
			}
			return fmt.Errorf("egress proxy: accepting a connection: %w", err)
		}
		wg.Go(func() { p.handle(ctx, c, b) })
	}
}

// session is one client connection.
type session struct {
	p        *Proxy
	b        *Budget
	client   net.Conn
	br       *bufio.Reader
	up       net.Conn
	ipTarget bool
	deadline time.Time
	rec      Record
	sent     atomic.Int64
	recvd    atomic.Int64
	mu       sync.Mutex
	closed   bool
}

func (p *Proxy) handle(ctx context.Context, c net.Conn, b *Budget) {
	s := &session{p: p, b: b, client: c, br: bufio.NewReader(c)}
	s.rec.Start = time.Now()
	s.rec.Client = c.RemoteAddr().String()
	s.deadline = b.connDeadline(s.rec.Start)
	stop := context.AfterFunc(ctx, s.closeAll)
	v := s.run(ctx)
	stop()
	s.closeAll()
	s.rec.BytesUp, s.rec.BytesDown = s.sent.Load(), s.recvd.Load()
	s.rec.DurationMS = time.Since(s.rec.Start).Milliseconds()
	s.rec.Verdict, s.rec.Code, s.rec.Reason = v.Decision, v.Code, v.Message
	if s.rec.Rule == "" {
		s.rec.Rule = v.Rule
	}
	p.cfg.OnConnection(s.rec)
}

func (s *session) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.client.Close()
	if s.up != nil {
		s.up.Close()
	}
}

func (s *session) handshakeDeadline() time.Time {
	d := time.Now().Add(s.p.cfg.HandshakeTimeout)
	if s.deadline.Before(d) {
		return s.deadline
	}
	return d
}

func (s *session) run(ctx context.Context) verdict.Verdict {
	s.client.SetDeadline(s.handshakeDeadline())
	first, err := s.br.Peek(1)
	if err != nil {
		return deny(verdict.EgressBadRequest, "the client sent no request: %v", err)
	}
	if first[0] == socksVersion {
		s.rec.Protocol = ProtoSOCKS5
		return s.socks(ctx)
	}
	return s.http(ctx)
}

// open decides host:port and dials it: a name must be on the list and
// every address it resolves to must pass CheckAddr (a name with one
// blocked address is refused, as the tripwire refuses it); an IP address
// must be inside an opted-in range. It re-resolves on every call.
func (s *session) open(ctx context.Context, host string, port uint16) verdict.Verdict {
	s.rec.Host, s.rec.Port = host, port
	if port == 0 {
		return deny(verdict.EgressBadRequest, "port 0 is not a destination")
	}
	if !s.b.takeConn() {
		return deny(verdict.EgressCapConnections, "the command opened more than %d connections", s.b.limits.MaxConnections)
	}
	rules := s.p.cfg.Rules
	var addrs []netip.Addr
	var hostRule string
	if ip, err := netip.ParseAddr(host); err == nil {
		s.ipTarget = true
		if v := rules.CheckIP(ip); v.Denied() {
			return v
		}
		addrs = []netip.Addr{ip}
	} else {
		v := rules.CheckHost(host)
		if v.Denied() {
			return v
		}
		hostRule = v.Rule
		s.rec.Host, _ = tripwire.NormalizeHost(host)
		rctx, cancel := context.WithTimeout(ctx, s.p.cfg.DialTimeout)
		addrs, err = s.p.cfg.Resolver.LookupNetIP(rctx, "ip", s.rec.Host)
		cancel()
		if err == nil && len(addrs) == 0 {
			err = errors.New("no addresses")
		}
		if err != nil {
			return deny(verdict.EgressUnresolvable, "host %s did not resolve: %v", s.rec.Host, err)
		}
		// The system resolver answers network "ip" with IPv4 addresses in
		// their IPv4-mapped IPv6 form; the record and the reason name
		// the IPv4 address the connection is really made to. The
		// address rules judge both forms alike.
		for i, a := range addrs {
			addrs[i] = a.Unmap()
		}
	}
	var addrRule string
	for _, a := range addrs {
		v := rules.CheckAddr(a)
		if v.Denied() {
			if !s.ipTarget {
				v.Message = "host " + s.rec.Host + " resolves to a refused address: " + v.Message
			}
			return v
		}
		addrRule = v.Rule
	}
	var errs []error
	for _, a := range addrs {
		target := net.JoinHostPort(tripwire.DialAddr(a).String(), strconv.Itoa(int(port)))
		dctx, cancel := context.WithTimeout(ctx, s.p.cfg.DialTimeout)
		c, err := s.p.cfg.Dial(dctx, "tcp", target)
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		s.up = c
		closed := s.closed
		s.mu.Unlock()
		if closed {
			c.Close()
			return deny(verdict.EgressDialFailed, "the proxy stopped")
		}
		s.rec.Addr = target
		rule := addrRule
		if hostRule != "" {
			rule = hostRule + "; " + addrRule
		}
		s.rec.Rule = rule
		return allow(rule)
	}
	return deny(verdict.EgressDialFailed, "could not connect to %s port %d: %v", s.rec.Host, port, errors.Join(errs...))
}

// checkHello reads the tunnel's first bytes, which must be a TLS
// ClientHello naming the target host (none for an IP target).
func (s *session) checkHello() ([]byte, verdict.Verdict) {
	s.client.SetReadDeadline(s.handshakeDeadline())
	raw, msg, err := readClientHello(s.br)
	if err != nil {
		return nil, deny(verdict.EgressNotTLS, "the tunnel to %s did not start with a TLS ClientHello (%v); only TLS is allowed through CONNECT and SOCKS5", s.rec.Host, err)
	}
	sni, err := parseSNI(msg)
	if err != nil {
		return nil, deny(verdict.EgressNotTLS, "malformed ClientHello in the tunnel to %s: %v", s.rec.Host, err)
	}
	s.rec.SNI = sni
	if s.ipTarget {
		if sni != "" {
			return nil, deny(verdict.EgressSNIMismatch, "TLS server name %q in a tunnel to IP address %s", sni, s.rec.Host)
		}
		return raw, allow("")
	}
	if sni == "" {
		return nil, deny(verdict.EgressSNIMismatch, "the ClientHello in the tunnel to %s has no server name", s.rec.Host)
	}
	if n, err := tripwire.NormalizeHost(sni); err != nil || n != s.rec.Host {
		return nil, deny(verdict.EgressSNIMismatch, "TLS server name %q is not the tunnel's host %s", sni, s.rec.Host)
	}
	return raw, allow("")
}

// tunnel checks the ClientHello, forwards it and relays both ways.
func (s *session) tunnel(allowed verdict.Verdict) verdict.Verdict {
	hello, v := s.checkHello()
	if v.Denied() {
		return v
	}
	if !s.b.take(true, int64(len(hello))) {
		return s.capBytes(true)
	}
	s.up.SetDeadline(s.deadline)
	s.client.SetDeadline(s.deadline)
	if _, err := s.up.Write(hello); err != nil {
		return s.ioEnd(err, allowed)
	}
	s.sent.Add(int64(len(hello)))
	var wg sync.WaitGroup
	var upV verdict.Verdict
	wg.Go(func() {
		upV = s.pump(s.up, s.br, true, allowed)
		closeWrite(s.up)
	})
	downV := s.pump(s.client, s.up, false, allowed)
	// The server is done: nothing the client still sends can be
	// answered, so both sides close rather than wait for the client.
	s.closeAll()
	wg.Wait()
	if downV.Denied() {
		return downV
	}
	return upV
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

func (s *session) capBytes(up bool) verdict.Verdict {
	if up {
		return deny(verdict.EgressCapBytes, "the command sent more than %d bytes", s.b.limits.MaxBytesUp)
	}
	return deny(verdict.EgressCapBytes, "the command received more than %d bytes", s.b.limits.MaxBytesDown)
}

// ioEnd turns the error that ended a relay into the verdict: a deadline
// that is the budget's is a cap; anything else ends the allowed
// connection normally.
func (s *session) ioEnd(err error, allowed verdict.Verdict) verdict.Verdict {
	if errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(s.deadline) {
		return deny(verdict.EgressCapDuration, "the connection reached its time limit (%s per connection, %s per command)", s.b.limits.MaxConnDuration, s.b.limits.MaxDuration)
	}
	return allowed
}

// pump copies src to dst, charging the budget; a cap reached closes both
// sides.
func (s *session) pump(dst net.Conn, src io.Reader, up bool, allowed verdict.Verdict) verdict.Verdict {
	buf := make([]byte, 32<<10)
	count := &s.recvd
	if up {
		count = &s.sent
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !s.b.take(up, int64(n)) {
				s.closeAll()
				return s.capBytes(up)
			}
			w, werr := dst.Write(buf[:n])
			count.Add(int64(w))
			if werr != nil {
				v := s.ioEnd(werr, allowed)
				if v.Denied() {
					s.closeAll()
				}
				return v
			}
		}
		if err != nil {
			v := s.ioEnd(err, allowed)
			if v.Denied() {
				s.closeAll()
			}
			return v
		}
	}
}
