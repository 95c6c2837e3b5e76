package server

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestDormantSessionRevives: a session idle past ECTO_SESSION_IDLE_SECS
// drops its state; the next intent rebuilds it from the ledger and the
// session goes on where it stood — the step count and the consecutive-
// denial counter carry over (the fifth denial in a row ends it, as if it
// had never been dropped).
func TestDormantSessionRevives(t *testing.T) {
	ts := startServer(t, tsOptions{env: map[string]string{"ECTO_SESSION_IDLE_SECS": "1", "AGENT_CHECK_DENIAL_LIMIT": "5"}})
	id := ts.createSession(map[string]any{"goal": "inspect the notes", "agent_loop": false})
	deny := `{"action":"run_command","params":{"command":"sudo ls %d"},"justification":"list as root"}`
	ts.intent(id, `{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the notes file"}`)
	for i := range 2 {
		if r := ts.intent(id, fmt.Sprintf(deny, i)); r["verdict"] != "deny" {
			t.Fatalf("denial %d: %v", i, r)
		}
	}
	waitDormant(t, ts, 1)
	for i := 2; i < 4; i++ {
		r := ts.intent(id, fmt.Sprintf(deny, i))
		if r["verdict"] != "deny" || r["step"] != float64(i+2) {
			t.Fatalf("after reviving, denial %d: %v; want a denial at step %d", i, r, i+2)
		}
		waitDormant(t, ts, 1)
	}
	r := ts.intent(id, fmt.Sprintf(deny, 4))
	if r["session_status"] != "aborted" || !strings.Contains(fmt.Sprint(r["session_ended"]), "halt_check_denials") {
		t.Fatalf("fifth denial in a row: %v; want the session ended by the denial breaker", r)
	}
	if v := ts.call("GET", "/api/sessions/"+id+"/verify", auditorTok, nil).json(t); v["ok"] != true {
		t.Fatalf("verify: %v", v)
	}
}

// waitDormant waits until n external sessions are dormant.
func waitDormant(t *testing.T, ts *testServer, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, d := ts.runners.idleCounts(); d >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session went dormant within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestShutdownEndsDormantSessions: a dormant session's end is recorded
// at shutdown without rebuilding it: session_halted with
// halt_interrupted at its last step, and status aborted.
func TestShutdownEndsDormantSessions(t *testing.T) {
	opts, _, _ := newOptions(t, tsOptions{env: map[string]string{"ECTO_SESSION_IDLE_SECS": "1", "DATABASE_URL": "<unset>"}})
	ts := startOpts(t, opts)
	id := ts.createSession(map[string]any{"goal": "wait", "agent_loop": false})
	ts.intent(id, `{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the notes file"}`)
	waitDormant(t, ts, 1)
	ts.stopNow()
	ts2 := startOpts(t, opts)
	s := ts2.call("GET", "/api/sessions/"+id, adminTok, nil).json(t)
	if s["status"] != "aborted" {
		t.Fatalf("status %v; want aborted", s["status"])
	}
	evs := ts2.events(id)
	last := evs[len(evs)-1]["payload"].(map[string]any)
	if last["type"] != "session_halted" || last["code"] != "halt_interrupted" || last["step"] != float64(1) {
		t.Fatalf("last event %v; want session_halted halt_interrupted at step 1", last)
	}
}

// BenchmarkIdleSessions creates b.N API sessions that wait for intents and
// reports the live heap per session before and after they go dormant
// (issue 13 item 3: the heap must stay flat however many wait).
func BenchmarkIdleSessions(b *testing.B) {
	opts, _, _ := newOptions(b, tsOptions{env: map[string]string{"ECTO_SESSION_IDLE_SECS": "3600", "DATABASE_URL": "<unset>",
		"ECTO_MAX_IDLE_SESSIONS": "1000000", "ECTO_MAX_IDLE_SESSIONS_PER_TOKEN": "1000000"}})
	srv, url := startBench(b, opts)
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	benchSession(b, url) // compiles the shared tripwire
	before := heap()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchSession(b, url)
	}
	b.StopTimer()
	live := heap()
	srv.evictIdle(time.Now().Add(2*time.Hour), time.Hour)
	dormant := heap()
	b.ReportMetric(float64(live-before)/float64(b.N), "heap-B/live-session")
	b.ReportMetric(float64(dormant-before)/float64(b.N), "heap-B/dormant-session")
}

// startOpts starts a server from prepared options (a restart reuses them:
// the same data dir and ledger file); it is shut down at the end of the
// test unless stopNow did so.
func startOpts(t *testing.T, opts Options) *testServer {
	t.Helper()
	srv, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	ts := &testServer{Server: srv, t: t, url: srv.URL(), dataDir: opts.Config.DataDir, ws: opts.Workspace}
	t.Cleanup(func() { ts.stopNow() })
	return ts
}

// stopNow shuts the server down gracefully (a second call does nothing).
func (ts *testServer) stopNow() {
	ts.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		ts.t.Errorf("shutdown: %v", err)
	}
}

// startBench starts a server from prepared options for a benchmark.
func startBench(b *testing.B, opts Options) (*Server, string) {
	b.Helper()
	srv, err := New(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv, srv.URL()
}
