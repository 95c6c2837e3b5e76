package egress

import (
	"net"
	"strings"
	"testing"
)

// BenchmarkConnectOverhead measures one HTTPS request on a new
// connection (TCP connect, TLS handshake, GET, response) to a loopback
// server, directly and through the proxy with CONNECT, side by side.
// The difference is the latency the proxy adds per connection.
func BenchmarkConnectOverhead(b *testing.B) {
	e := newEnv(b, envOpts{cidrs: loopOptIn, limits: Limits{MaxConnections: 1 << 40}})
	target := "allowed.test:" + port(e.tls)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("tcp", e.tls.Listener.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			body, err := httpsOver(c, "allowed.test", e.pool)
			c.Close()
			if err != nil || !strings.HasPrefix(body, "hello") {
				b.Fatalf("%q %v", body, err)
			}
		}
	})
	b.Run("proxy", func(b *testing.B) {
		for b.Loop() {
			c, _, code, _ := e.connect(target)
			if code != 200 {
				b.Fatalf("CONNECT status %d", code)
			}
			body, err := httpsOver(c, "allowed.test", e.pool)
			c.Close()
			if err != nil || !strings.HasPrefix(body, "hello") {
				b.Fatalf("%q %v", body, err)
			}
		}
	})
}
