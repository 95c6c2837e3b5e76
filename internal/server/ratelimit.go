package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// bucketIdle is how long an unused bucket is kept
// (docs/design/api.md#rate-limits).
const bucketIdle = 10 * time.Minute

// buckets is one token-bucket limiter keyed by client IP: capacity burst,
// refilled continuously at rate tokens per second, starting full.
type buckets struct {
	rate  float64
	burst float64

	mu sync.Mutex
	m  map[netip.Addr]*bucket // guarded by mu
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newBuckets(rate, burst int) *buckets {
	return &buckets{rate: float64(rate), burst: float64(burst), m: map[netip.Addr]*bucket{}}
}

// take takes one token for ip; when none is left it reports how long until
// one is available.
func (b *buckets) take(ip netip.Addr, now time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.m[ip]
	if k == nil {
		k = &bucket{tokens: b.burst, last: now}
		b.m[ip] = k
	}
	if el := now.Sub(k.last).Seconds(); el > 0 {
		k.tokens = min(b.burst, k.tokens+el*b.rate)
	}
	k.last = now
	if k.tokens >= 1 {
		k.tokens--
		return 0, true
	}
	return time.Duration((1 - k.tokens) / b.rate * float64(time.Second)), false
}

// sweep drops buckets idle for bucketIdle.
func (b *buckets) sweep(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ip, k := range b.m {
		if now.Sub(k.last) > bucketIdle {
			delete(b.m, ip)
		}
	}
}

// rateLimits are the three limiters of docs/design/api.md#rate-limits.
type rateLimits struct {
	global, session, sse *buckets
}

func (l *rateLimits) sweep(now time.Time) {
	l.global.sweep(now)
	l.session.sweep(now)
	l.sse.sweep(now)
}

// clientIP is the TCP peer, unless the peer is a trusted proxy: then the
// right-most X-Forwarded-For address that is not itself a trusted proxy.
// Only trusted peers are believed, so a client cannot pick its own bucket by
// sending the header.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.IPv6Unspecified()
	}
	peer = peer.Unmap().WithZone("")
	if !s.trusted(peer) {
		return peer
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer // a malformed hop ends what can be believed
		}
		a = a.Unmap().WithZone("")
		if !s.trusted(a) {
			return a
		}
	}
	return peer
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.Server.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
