//go:build linux

package server

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// startShortLeaseServer starts a server on the real native tier and a
// SQLite file in its data dir, with a ledger lease and a per-write
// deadline of one second: the three-second commands of these tests
// outlast both, as a 40 s command outlasts the real 30 s lease.
func startShortLeaseServer(t *testing.T, env map[string]string) *testServer {
	t.Helper()
	env["DATABASE_URL"] = "<unset>"
	opts, stdout, stderr := newOptions(t, tsOptions{native: true, env: env})
	opts.LeaseDuration, opts.WriteTimeout = time.Second, time.Second
	srv, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &testServer{Server: srv, t: t, url: srv.URL(), dataDir: opts.Config.DataDir, ws: opts.Workspace, stdout: stdout, stderr: stderr}
}

// recoverAfter is another IronVise instance starting on the same ledger
// file after d, while the command runs (ledgertest.RecoverAfter).
func (ts *testServer) recoverAfter(d time.Duration) <-chan []uuid.UUID {
	return ledgertest.RecoverAfter(ts.t, d, func() (*ledger.Ledger, error) {
		return ledgerdb.Open(context.Background(), "", 5, ledger.Options{DataDir: ts.dataDir})
	})
}

// sessionRecord checks what a session's chain holds after a long command:
// one sandbox_result with status ok and exit 0, its output in the
// observation, and no recovery by another instance.
func (ts *testServer) sessionRecord(id string) {
	t := ts.t
	t.Helper()
	evs := ts.events(id)
	var sr, obs []map[string]any
	for _, e := range evs {
		p := e["payload"].(map[string]any)
		switch p["type"] {
		case "sandbox_result":
			sr = append(sr, p)
		case "observation":
			obs = append(obs, p)
		}
	}
	if typ := payloadTypes(evs); slices.Contains(typ, "recovery") {
		t.Fatalf("events %v: another instance recovered the session while it ran", typ)
	}
	if len(sr) != 1 || sr[0]["status"] != "ok" || sr[0]["exit_code"] != float64(0) {
		t.Fatalf("sandbox_result %v; want one, status ok, exit 0 (events %v)", sr, payloadTypes(evs))
	}
	if len(obs) != 1 || !strings.Contains(obs[0]["content"].(string), "long-done") {
		t.Fatalf("observation %v; want the command's output", obs)
	}
}

const longCommand = `{"action":"run_command","params":{"command":"sleep 3; echo long-done"},"justification":"wait for the slow job"}`

// TestIntentLongerThanLease is the intents route: an intent whose command
// outlasts the lease and the write deadline is recorded and answered, and
// the session then completes.
func TestIntentLongerThanLease(t *testing.T) {
	ts := startShortLeaseServer(t, map[string]string{})
	id := ts.createSession(map[string]any{"goal": "wait for the slow job", "agent_loop": false})
	recovered := ts.recoverAfter(2 * time.Second)
	r := ts.intent(id, longCommand)
	if r["executed"] != true || r["exit_code"] != float64(0) || !strings.Contains(r["observation"].(string), "long-done") {
		t.Fatalf("intent result %v; want executed, exit 0, the output", r)
	}
	if got := <-recovered; len(got) != 0 {
		t.Fatalf("another instance recovered %v while the command ran: the lease was not renewed", got)
	}
	r = ts.intent(id, `{"action":"complete","params":{"findings":[]},"justification":"the slow job finished"}`)
	if r["session_status"] != "completed" {
		t.Fatalf("complete: %v", r)
	}
	ts.sessionRecord(id)
}

// TestLoopLongerThanLease is the server runner's agent loop: the step is
// recorded and the loop completes and seals the session.
func TestLoopLongerThanLease(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.jsonl")
	lines := `{"role":"agent","content":"{\"action\":\"run_command\",\"params\":{\"command\":\"sleep 3; echo long-done\"},\"justification\":\"wait for the slow job\"}"}
{"role":"agent","content":"{\"action\":\"complete\",\"params\":{\"findings\":[]},\"justification\":\"the slow job finished\"}"}
`
	if err := os.WriteFile(script, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startShortLeaseServer(t, map[string]string{"MOCK_LLM_SCRIPT": script})
	id := ts.createSession(map[string]any{"goal": "wait for the slow job"})
	recovered := ts.recoverAfter(2 * time.Second)
	if got := <-recovered; len(got) != 0 {
		t.Fatalf("another instance recovered %v while the command ran: the lease was not renewed", got)
	}
	// The loop ends the session, then issues its credential and seals it.
	s := ts.waitEnded(id, 30*time.Second)
	for end := time.Now().Add(10 * time.Second); s["sealed"] != true && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		s = ts.call("GET", "/api/sessions/"+id, adminTok, nil).json(t)
	}
	if s["status"] != "completed" || s["sealed"] != true {
		t.Fatalf("session %v; want completed and sealed (events %v)", s, payloadTypes(ts.events(id)))
	}
	ts.sessionRecord(id)
}
