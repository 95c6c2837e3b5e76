package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// freshConns tracks the HTTP connections that have sent no request yet
// (http.StateNew), so that shutting down does not wait for them.
// http.Server.Shutdown waits up to 5 s before it takes such a connection as
// idle, since its first request may be on the way, so every one made a
// shutdown 5 s longer (TestShutdownClosesConnectionsWithoutRequest). A
// client can leave one open by connecting and sending nothing yet: the
// runs of TestMCPShutdownSealsOpenConnections that failed found such a
// connection of the MCP client's, whose stream the shutdown had just
// ended.
type freshConns struct {
	mu sync.Mutex
	m  map[net.Conn]struct{}
}

// track is the http.Server's ConnState hook.
func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st != http.StateNew {
		delete(f.m, c)
		return
	}
	if f.m == nil {
		f.m = map[net.Conn]struct{}{}
	}
	f.m[c] = struct{}{}
}

// closingDuring runs shutdown (http.Server.Shutdown, which closes the
// listener first) and, until it returns, closes every connection that has
// sent no request, every 20 ms: the server is going away, and a request
// that has begun to arrive (http.StateActive) is left to Shutdown.
func (f *freshConns) closingDuring(shutdown func() error) error {
	done := make(chan error, 1)
	go func() { done <- shutdown() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			f.mu.Lock()
			for c := range f.m {
				c.Close()
				delete(f.m, c)
			}
			f.mu.Unlock()
		}
	}
}
