package server

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestShutdownLogsSlowSteps: a step of Shutdown that takes a second or
// more is logged by name, with how long it took; a quick one is recorded
// but not logged.
func TestShutdownLogsSlowSteps(t *testing.T) {
	var buf bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&buf, nil))}
	s.timeStep("a quick step", func() {})
	if buf.Len() != 0 {
		t.Fatalf("a quick step was logged: %s", buf.String())
	}
	s.timeStep("a slow step", func() { time.Sleep(slowShutdownStep) })
	out := buf.String()
	if !strings.Contains(out, `step="a slow step"`) || !strings.Contains(out, "took=") {
		t.Fatalf("the slow step was not logged with its name and duration: %s", out)
	}
	if len(s.shutdownSteps) != 2 || s.shutdownSteps[0].name != "a quick step" || s.shutdownSteps[1].took < slowShutdownStep {
		t.Fatalf("steps recorded: %+v", s.shutdownSteps)
	}
}

// TestShutdownRecordsItsSteps: a real shutdown records every step it
// took, in order, so that a slow one can be named.
func TestShutdownRecordsItsSteps(t *testing.T) {
	ts := startServer(t, tsOptions{})
	if err := ts.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range ts.shutdownSteps {
		names = append(names, st.name)
	}
	got := strings.Join(names, ", ")
	for _, want := range []string{"end the MCP connections", "stop the HTTP server", "stop the running sessions", "seal the MCP sessions", "wait for the requests and background work", "close the ledger"} {
		if !strings.Contains(got, want) {
			t.Fatalf("shutdown steps %q lack %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "close the ledger") {
		t.Fatalf("the ledger is not closed last: %q", got)
	}
}

// TestShutdownClosesConnectionsWithoutRequest: a connection that sent no
// request does not hold up the HTTP server's shutdown. net/http's
// Shutdown waits up to 5 s before it takes such a connection as idle, and
// HTTP clients leave them: Go's keeps a connection it dialed for a request
// that was cancelled meanwhile (an MCP client's stream reconnecting as the
// server ends it). That made TestMCPShutdownSealsOpenConnections fail now
// and then (once in 30 runs when it was found).
func TestShutdownClosesConnectionsWithoutRequest(t *testing.T) {
	ts := startServer(t, tsOptions{})
	addr := strings.TrimPrefix(ts.url, "http://")
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// The server has accepted them (a request on another connection is
	// answered after they were), and none has sent anything.
	resp, err := http.Get(ts.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	start := time.Now()
	if err := ts.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= time.Second {
		t.Fatalf("shutdown took %v with %d connections that sent no request; its steps: %v", d, len(conns), ts.shutdownSteps)
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatalf("connection %d still open after shutdown", i)
		}
	}
}
