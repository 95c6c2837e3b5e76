package server

import (
	"context"
	"database/sql"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestTokenBootstrap: without OBSERVER_TOKEN a one-run admin token is
// printed once to stdout, works, is deleted at shutdown, and a leftover is
// deleted at the next start (docs/design/api.md#token-bootstrap).
func TestTokenBootstrap(t *testing.T) {
	dataDir := t.TempDir()
	env := map[string]string{"OBSERVER_TOKEN": "<unset>", "DATABASE_URL": "<unset>", "ECTO_BIND_HOST": "0.0.0.0"}
	opts, stdout, stderr := newOptions(t, tsOptions{dataDir: dataDir, env: env})
	srv, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^OBSERVER_TOKEN is not set; generated a one-run admin token: ([0-9a-f]{64})\nDashboard: http://localhost:(\d+)/\?token=([0-9a-f]{64})\n$`).FindStringSubmatch(stdout.String())
	if m == nil || m[1] != m[3] {
		t.Fatalf("stdout %q", stdout.String())
	}
	tok := m[1]
	if !strings.Contains(stderr.String(), "listening on http://localhost:"+m[2]+"\n") || strings.Contains(stderr.String(), tok) {
		t.Errorf("stderr %q", stderr.String())
	}
	ts := &testServer{Server: srv, t: t, url: "http://127.0.0.1:" + m[2]}
	if r := ts.call("GET", "/api/tokens", tok, nil); r.status != 200 || !strings.Contains(string(r.body), labelGenerated) {
		t.Errorf("one-run token: %d %s", r.status, r.body)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if strings.Count(stdout.String(), tok) != 2 {
		t.Errorf("the token was printed again: %q", stdout.String())
	}
	// Plant a leftover one-run token (a crash skips the delete), then
	// start again: it is gone, and a new one is printed.
	opts2, stdout2, _ := newOptions(t, tsOptions{dataDir: dataDir, env: env})
	srv2, err := New(context.Background(), opts2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv2.ledger().Token(context.Background(), TokenHash(tok)); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("the one-run token survived its process: %v", err)
	}
	srv2.ledger().PutToken(context.Background(), ledger.Token{Hash: TokenHash("leftover"), Role: RoleAdmin, Label: labelGenerated})
	srv2.Shutdown(context.Background())
	srv3, err := New(context.Background(), opts2)
	if err != nil {
		t.Fatal(err)
	}
	defer srv3.Shutdown(context.Background())
	if _, err := srv3.ledger().Token(context.Background(), TokenHash("leftover")); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a leftover one-run token was kept: %v", err)
	}
	_ = stdout2
}

// TestObserverTokenForcedAdmin: a known OBSERVER_TOKEN hash is forced to
// admin without expiry.
func TestObserverTokenForcedAdmin(t *testing.T) {
	dataDir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "<unset>"}
	opts, _, _ := newOptions(t, tsOptions{dataDir: dataDir, env: env})
	srv, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.ledger().PutToken(context.Background(), ledger.Token{Hash: TokenHash(adminTok), Role: RoleAuditor, Label: "demoted", ExpiresAt: time.Now().Add(-time.Hour)})
	srv.Shutdown(context.Background())
	ts := startServer(t, tsOptions{dataDir: dataDir, env: env})
	ts.wantStatus(t, "OBSERVER_TOKEN after restart", 200, "GET", "/api/config", adminTok, nil)
}

// TestStartupRefusals: serve refuses to start on tampering, a failing
// sandbox self-test (unless permissive), broken data-dir files and an
// unconfigured guard.
func TestStartupRefusals(t *testing.T) {
	t.Run("tampered ledger", func(t *testing.T) {
		dataDir := t.TempDir()
		env := map[string]string{"DATABASE_URL": "<unset>"}
		ts := startServer(t, tsOptions{dataDir: dataDir, env: env})
		id := ts.createSession(map[string]any{"goal": "record", "agent_loop": false})
		ts.call("POST", "/api/sessions/"+id+"/events", adminTok, map[string]any{"type": "thought", "content": "original"})
		ts.Shutdown(context.Background())
		db, err := sql.Open("sqlite", filepath.Join(dataDir, "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		// Triggers forbid UPDATE on events: drop them, as an attacker with
		// the file would, then rewrite a payload.
		rows, _ := db.Query(`SELECT name FROM sqlite_master WHERE type='trigger'`)
		var trig []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			trig = append(trig, n)
		}
		rows.Close()
		for _, n := range trig {
			db.Exec(`DROP TRIGGER "` + n + `"`)
		}
		res, err := db.Exec(`UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT), 'original', 'forged!!') AS BLOB) WHERE CAST(payload AS TEXT) LIKE '%original%'`)
		if err != nil {
			t.Fatalf("tamper: %v", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("tampered %d rows", n)
		}
		db.Close()
		// The startup check verifies the log and the tails of running
		// sessions; this session ended at shutdown, so only the full check
		// recomputes its hashes. The default start serves it and reports it.
		opts, _, _ := newOptions(t, tsOptions{dataDir: dataDir, env: env})
		opts.VerifyFull = true
		if srv, err := New(context.Background(), opts); err == nil {
			srv.Shutdown(context.Background())
			t.Fatal("started on a tampered ledger with VerifyFull")
		} else if !errors.Is(err, ledger.ErrTampered) {
			t.Errorf("error %v does not wrap ErrTampered", err)
		}
		ts2 := startServer(t, tsOptions{dataDir: dataDir, env: env})
		v := ts2.call("GET", "/api/sessions/"+id+"/verify", adminTok, nil).json(t)
		if v["ok"] != false || v["chain_ok"] != false || v["error"] == nil {
			t.Errorf("verify of the tampered session: %v", v)
		}
		if m := ts2.call("GET", "/api/metrics/security", adminTok, nil).json(t); m["chain_verification_failures"] != float64(1) {
			t.Errorf("security metrics %v", m)
		}
	})
	t.Run("sandbox self-test", func(t *testing.T) {
		broken := sandbox.NewUnavailable(&sandbox.UnavailableError{Tier: sandbox.TierNativeLinux, Reason: "Landlock is not enabled in this kernel", Fix: "boot with lsm=landlock"})
		opts, _, _ := newOptions(t, tsOptions{native: true, tier: broken})
		if srv, err := New(context.Background(), opts); err == nil {
			srv.Shutdown(context.Background())
			t.Fatal("started with a failing sandbox")
		} else if !strings.Contains(err.Error(), "self-test") {
			t.Errorf("error %v", err)
		}
		// Permissive: starts, and says so.
		ts := startServer(t, tsOptions{tier: broken})
		rep := ts.call("GET", "/api/sandbox", auditorTok, nil).json(t)
		if rep["status"] != "failed" || rep["permissive"] != true || len(rep["problems"].([]any)) == 0 {
			t.Errorf("sandbox report %v", rep)
		}
		if p := rep["problems"].([]any)[0].(map[string]any); p["fix"] != "boot with lsm=landlock" {
			t.Errorf("problem %v", p)
		}
		r := ts.call("GET", "/readyz", "", nil).json(t)
		if r["status"] != "ready" || r["checks"].(map[string]any)["sandbox"] != "permissive" {
			t.Errorf("readyz %v", r)
		}
	})
	t.Run("broken settings.json", func(t *testing.T) {
		dataDir := t.TempDir()
		os.WriteFile(filepath.Join(dataDir, "settings.json"), []byte(`{"max_steps": "many"}`), 0o600)
		opts, _, _ := newOptions(t, tsOptions{dataDir: dataDir})
		if _, err := New(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "settings.json") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("broken tripwire.json", func(t *testing.T) {
		dataDir := t.TempDir()
		os.WriteFile(filepath.Join(dataDir, "tripwire.json"), []byte(`{"allowed_roots": ["relative/path"]}`), 0o600)
		opts, _, _ := newOptions(t, tsOptions{dataDir: dataDir})
		if _, err := New(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "tripwire.json") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("guard required but not configured", func(t *testing.T) {
		opts, _, _ := newOptions(t, tsOptions{env: map[string]string{"GUARD_REQUIRED": "true", "LLM_BACKEND": "ollama"}})
		if _, err := New(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "GUARD_LLM_BACKEND") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("settings.json applies at start", func(t *testing.T) {
		dataDir := t.TempDir()
		os.WriteFile(filepath.Join(dataDir, "settings.json"), []byte(`{"max_steps": 7, "guard_required": false}`), 0o600)
		ts := startServer(t, tsOptions{dataDir: dataDir})
		if c := ts.call("GET", "/api/config", adminTok, nil).json(t); c["max_steps"] != float64(7) {
			t.Errorf("config %v", c)
		}
	})
	t.Run("guard unconfigured after a config change is a 503", func(t *testing.T) {
		ts := startServer(t, tsOptions{env: map[string]string{"LLM_BACKEND": "ollama"}})
		if r := ts.call("PUT", "/api/config", adminTok, map[string]any{"guard_required": true}); r.status != 200 {
			t.Fatalf("config: %d %s", r.status, r.body)
		}
		if r := ts.call("POST", "/api/sessions", adminTok, map[string]any{"goal": "x"}); r.status != 503 || !strings.Contains(string(r.body), "GUARD_LLM_BACKEND") {
			t.Errorf("create: %d %s", r.status, r.body)
		}
	})
}

// TestRateLimits is checklist item 46 with the default limits, plus the
// trusted-proxy rule of docs/design/api.md#rate-limits.
func TestRateLimits(t *testing.T) {
	defaults := map[string]string{}
	for _, k := range []string{"API_RATE_LIMIT_PER_SECOND", "API_RATE_LIMIT_BURST", "SESSION_RATE_LIMIT_PER_SECOND", "SESSION_RATE_LIMIT_BURST", "SSE_RATE_LIMIT_PER_SECOND", "SSE_RATE_LIMIT_BURST"} {
		defaults[k] = "<unset>"
	}
	// count429 sends n requests from 8 concurrent clients ("rapid": the
	// race detector must not make them slower than the refill).
	count429 := func(ts *testServer, n int, method, path string, body any, headers ...string) int {
		var limited atomic.Int64
		var wg sync.WaitGroup
		next := make(chan struct{}, n)
		for i := 0; i < n; i++ {
			next <- struct{}{}
		}
		close(next)
		for w := 0; w < min(8, n); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range next {
					r := ts.call(method, path, adminTok, body, headers...)
					if r.status == 429 {
						limited.Add(1)
						if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" || (method != "HEAD" && !strings.Contains(string(r.body), "rate limit exceeded; retry in ")) {
							t.Errorf("429 without Retry-After or message: %v %s", r.header, r.body)
						}
					}
				}
			}()
		}
		wg.Wait()
		return int(limited.Load())
	}
	t.Run("session creates", func(t *testing.T) {
		ts := startServer(t, tsOptions{env: defaults})
		if n := count429(ts, 8, "POST", "/api/sessions", map[string]any{"goal": "x", "agent_loop": false}); n == 0 {
			t.Error("8 rapid creates: no 429")
		}
	})
	t.Run("stream opens", func(t *testing.T) {
		ts := startServer(t, tsOptions{env: defaults})
		if n := count429(ts, 15, "HEAD", "/api/stream", nil); n == 0 {
			t.Error("15 rapid stream opens: no 429")
		}
	})
	t.Run("api calls", func(t *testing.T) {
		ts := startServer(t, tsOptions{env: defaults})
		// A route that does not touch the database, so the requests stay
		// rapid even under the race detector (the pure-Go SQLite is slow
		// there).
		if n := count429(ts, 150, "GET", "/api/policies", nil); n == 0 {
			t.Error("150 rapid calls: no 429")
		}
		// Public routes are never limited.
		ts.wantStatus(t, "healthz while limited", 200, "GET", "/healthz", "", nil)
		// An untrusted peer cannot choose its bucket with X-Forwarded-For.
		if n := count429(ts, 3, "GET", "/api/policies", nil, "X-Forwarded-For", "203.0.113.9"); n == 0 {
			t.Error("X-Forwarded-For from an untrusted peer was believed")
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		env := map[string]string{"ECTO_TRUSTED_PROXIES": "127.0.0.0/8", "API_RATE_LIMIT_PER_SECOND": "1", "API_RATE_LIMIT_BURST": "2"}
		ts := startServer(t, tsOptions{env: env})
		if n := count429(ts, 4, "GET", "/api/sessions", nil, "X-Forwarded-For", "198.51.100.1, 127.0.0.2"); n != 2 {
			t.Errorf("client 198.51.100.1: %d of 4 limited; want 2", n)
		}
		if n := count429(ts, 2, "GET", "/api/sessions", nil, "X-Forwarded-For", "198.51.100.2"); n != 0 {
			t.Errorf("another client behind the proxy shares a bucket: %d limited", n)
		}
	})
}

// TestBuckets pins the token-bucket arithmetic.
func TestBuckets(t *testing.T) {
	b := newBuckets(2, 3)
	ip := someIP()
	now := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if _, ok := b.take(ip, now); !ok {
			t.Fatalf("token %d refused from a full bucket", i)
		}
	}
	wait, ok := b.take(ip, now)
	if ok || wait != 500*time.Millisecond {
		t.Errorf("empty bucket: ok=%v wait=%v; want 500ms", ok, wait)
	}
	if _, ok := b.take(ip, now.Add(500*time.Millisecond)); !ok {
		t.Error("refill at 2/s")
	}
	b.sweep(now.Add(bucketIdle + time.Minute))
	if len(b.m) != 0 {
		t.Error("idle bucket kept")
	}
}

func someIP() netip.Addr { return netip.MustParseAddr("192.0.2.1") }
