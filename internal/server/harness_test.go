package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/demo"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native"
	"github.com/ironvise/ironvise/internal/secretpaths"
)

// TestMain lets this test binary stand in for the ironvise binary where
// IronVise re-executes itself: the native tier runs /proc/self/exe as its
// launcher, and the guard host starts `<exe> guard-worker`.
func TestMain(m *testing.M) {
	if native.IsLauncher(os.Args) {
		os.Exit(native.LauncherMain(os.Args))
	}
	if len(os.Args) > 1 && os.Args[1] == guard.WorkerArg {
		os.Exit(testGuardWorker())
	}
	if spec := os.Getenv(serveChildEnv); spec != "" {
		os.Exit(serveChild(spec))
	}
	os.Exit(m.Run())
}

// testGuardWorker is a guard worker for these tests: the same protocol and
// model client as `ironvise guard-worker` (internal/cli, which this package
// cannot import), without the worker's self-confinement.
func testGuardWorker() int {
	key, err := hex.DecodeString(os.Getenv(guard.KeyEnv))
	os.Unsetenv(guard.KeyEnv)
	if err != nil || len(key) != guard.KeyBytes {
		fmt.Fprintln(os.Stderr, "test guard worker: no key")
		return 2
	}
	look, _ := config.OSLookup("")
	cfg, err := config.Load(look)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test guard worker:", err)
		return 2
	}
	client, err := llm.NewGuard(cfg.Guard, cfg.LLM, llm.Options{BuiltinScript: demo.Script()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "test guard worker:", err)
		return 2
	}
	if err := guard.Serve(context.Background(), os.Stdin, os.Stdout, guard.WorkerOptions{Key: key, Client: client,
		LLMTimeout: guard.LLMTimeout(time.Duration(cfg.Guard.TimeoutSecs) * time.Second)}); err != nil {
		return 1
	}
	return 0
}

// Tokens of the test servers.
const (
	adminTok   = "admin-token-0123456789abcdef0123456789abcdef"
	auditorTok = "auditor-token-0123456789abcdef0123456789abcd"
	agentTok   = "agent-token-0123456789abcdef0123456789abcdef"
)

// testServer is a real server on loopback.
type testServer struct {
	*Server
	t       *testing.T
	url     string
	dataDir string
	ws      string
	stdout  *syncBuffer
	stderr  *syncBuffer
}

type tsOptions struct {
	env    map[string]string
	native bool // the real native tier instead of the permissive one
	tier   sandbox.Tier
	// noStart leaves the server unstarted (startup tests).
	dataDir   string
	workspace string
}

// baseEnv is the offline configuration of checklist item 50: the mock
// LLM, no guard, very high rate limits.
func baseEnv(dataDir string) map[string]string {
	return map[string]string{
		"ECTO_DATA_DIR": dataDir, "LLM_BACKEND": "mock", "GUARD_REQUIRED": "false", "ECTO_BIND_PORT": "0",
		"OBSERVER_TOKEN": adminTok, "ECTOLEDGER_AUDITOR_TOKEN": auditorTok, "ECTOLEDGER_AGENT_TOKEN": agentTok,
		"DATABASE_URL": "sqlite::memory:", "API_RATE_LIMIT_PER_SECOND": "100000", "API_RATE_LIMIT_BURST": "100000",
		"SESSION_RATE_LIMIT_PER_SECOND": "100000", "SESSION_RATE_LIMIT_BURST": "100000",
		"SSE_RATE_LIMIT_PER_SECOND": "100000", "SSE_RATE_LIMIT_BURST": "100000", "ECTO_SANDBOX_PERMISSIVE": "true",
		"HOME": os.Getenv("HOME"), "PATH": os.Getenv("PATH"),
	}
}

// newOptions builds the Options of a test server without starting it.
func newOptions(t testing.TB, o tsOptions) (Options, *syncBuffer, *syncBuffer) {
	t.Helper()
	if o.dataDir == "" {
		o.dataDir = t.TempDir()
	}
	if o.workspace == "" {
		ws, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(ws, 0o755)
		os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("PermitRootLogin yes\n"), 0o644)
		o.workspace = ws
	}
	env := baseEnv(o.dataDir)
	if o.native {
		delete(env, "ECTO_SANDBOX_PERMISSIVE")
	}
	for k, v := range o.env {
		if v == "<unset>" {
			delete(env, k)
			continue
		}
		env[k] = v
	}
	cfg, err := config.Load(config.MapLookup(env))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	tier := o.tier
	if tier == nil {
		tier, err = sandbox.Select(sandbox.Options{Permissive: cfg.Sandbox.Permissive, Timeout: 20 * time.Second}, sandbox.Factories{Native: native.New})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The composition root's list, as internal/cli computes it.
	protect, err := secretpaths.Compute(secretpaths.Sources{DataDir: cfg.DataDir, Home: cfg.Host.Home})
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	exe, _ := os.Executable()
	return Options{
		Config: cfg, Lookup: config.MapLookup(env), Workspace: o.workspace, Protected: protect, Tier: tier, Version: "test",
		Stdout: stdout, Stderr: stderr, GuardExecutable: exe, FeedPoll: 50 * time.Millisecond, ApprovalPoll: 20 * time.Millisecond,
	}, stdout, stderr
}

// startServer starts a test server and stops it at the end of the test.
func startServer(t *testing.T, o tsOptions) *testServer {
	t.Helper()
	opts, stdout, stderr := newOptions(t, o)
	ts := startOpts(t, opts)
	ts.stdout, ts.stderr = stdout, stderr
	return ts
}

// resp is a finished response.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %q", err, r.body)
	}
	return m
}

func (r resp) list(t *testing.T) []map[string]any {
	t.Helper()
	var m []map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON array of objects: %v: %q", err, r.body)
	}
	return m
}

// noRedirect is a client that never follows redirects, so a 3xx shows.
var noRedirect = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       60 * time.Second,
}

// wantStatus sends a request (as call does) and checks that it gets the
// status want; what names the case in a failure.
func (ts *testServer) wantStatus(t *testing.T, what string, want int, method, path, tok string, body any, headers ...string) {
	t.Helper()
	if r := ts.call(method, path, tok, body, headers...); r.status != want {
		t.Errorf("%s: %s %s: status %d; want %d: %s", what, method, path, r.status, want, r.body)
	}
}

// call sends a request: body is sent as given (a string or []byte) or as
// JSON (anything else, with Content-Type application/json unless headers
// say otherwise). tok "" sends no token.
func (ts *testServer) call(method, path, tok string, body any, headers ...string) resp {
	ts.t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			ts.t.Fatal(err)
		}
		rd, ct = bytes.NewReader(js), "application/json"
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// createSession creates a session and returns its id.
func (ts *testServer) createSession(body map[string]any) string {
	ts.t.Helper()
	r := ts.call("POST", "/api/sessions", adminTok, body)
	if r.status != 200 {
		ts.t.Fatalf("create session: %d %s", r.status, r.body)
	}
	return r.json(ts.t)["id"].(string)
}

// waitStatus waits until a session leaves running (or the deadline).
func (ts *testServer) waitEnded(id string, within time.Duration) map[string]any {
	ts.t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := ts.call("GET", "/api/sessions/"+id, adminTok, nil).json(ts.t)
		if s["status"] != "running" || time.Now().After(deadline) {
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sseClient reads frames from a stream.
type sseClient struct {
	res    *http.Response
	frames chan sseFrame
	cancel context.CancelFunc
	done   chan struct{}
}

type sseFrame struct {
	raw   string
	event string
	id    string
	data  string
	at    time.Time
}

// openStream opens an SSE stream and reads its frames in the background.
func (ts *testServer) openStream(path, tok string, headers ...string) *sseClient {
	ts.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.url+path, nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		ts.t.Fatalf("stream %s: %v", path, err)
	}
	c := &sseClient{res: res, frames: make(chan sseFrame, 100000), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer close(c.frames)
		br := bufio.NewReader(res.Body)
		var cur strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			cur.WriteString(line)
			if line == "\n" {
				f := sseFrame{raw: cur.String(), at: time.Now()}
				for _, l := range strings.Split(strings.TrimSuffix(f.raw, "\n\n"), "\n") {
					switch {
					case strings.HasPrefix(l, "event: "):
						f.event = l[7:]
					case strings.HasPrefix(l, "id: "):
						f.id = l[4:]
					case strings.HasPrefix(l, "data: "):
						f.data = l[6:]
					}
				}
				c.frames <- f
				cur.Reset()
			}
		}
	}()
	ts.t.Cleanup(c.close)
	return c
}

func (c *sseClient) close() {
	c.cancel()
	c.res.Body.Close()
	<-c.done
}

// next returns the next frame or fails after d.
func (c *sseClient) next(t *testing.T, d time.Duration) (sseFrame, bool) {
	t.Helper()
	select {
	case f, ok := <-c.frames:
		return f, ok
	case <-time.After(d):
		return sseFrame{}, false
	}
}

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// jsonDecode decodes a response body.
func jsonDecode(res *http.Response, v any) error { return json.NewDecoder(res.Body).Decode(v) }
