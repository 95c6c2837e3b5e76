package server

import (
	"bytes"
	"log/slog"
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
