package guard

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/verdict"
)

// logBuffer collects the host log; the stderr copier writes concurrently.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// hostSetup is one test host's configuration, adjusted per test.
type hostSetup struct {
	guard config.Guard
	llm   config.LLM
	mitm  string // mitm mode, "" for the plain binary
	exe   string // overrides the executable
	// enclave is HostOptions.Enclave.
	enclave enclave.Level
	// wrap, when set, starts the worker through the test binary's
	// execMain with these settings (see main_test.go).
	wrap []string
	// prepare adjusts the worker's command (asNobody).
	prepare func(*exec.Cmd)
	// env is added to the worker's environment.
	env []string
	// hashPath overrides the file the host hashes for the software
	// enclave.
	hashPath string
	// remoteRoots replaces the pinned AWS Nitro root for a remote
	// enclave (the stand-in enclave's test authority).
	remoteRoots *x509.CertPool
}

func defaultSetup() hostSetup {
	return hostSetup{
		guard: config.Guard{Required: true, Backend: "mock", Model: "mock-v1", TimeoutSecs: 10, MockReply: "ALLOW", MockReplySet: true},
		llm:   config.LLM{Backend: "mock"},
	}
}

// withMockScript is the default setup with the mock guard's replies taken
// from a MOCK_LLM_SCRIPT holding script, not from GUARD_MOCK_REPLY.
func withMockScript(t testing.TB, script string) hostSetup {
	path := filepath.Join(t.TempDir(), "script.jsonl")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	s := defaultSetup()
	s.guard.MockReplySet, s.guard.MockReply = false, ""
	s.llm.MockScript, s.llm.MockScriptIsSet = path, true
	return s
}

// withMITM is the default setup with the worker's channel tampered with as
// mode says.
func withMITM(mode string) hostSetup {
	s := defaultSetup()
	s.mitm = mode
	return s
}

func newTestHost(t testing.TB, s hostSetup) (*Host, *logBuffer) {
	t.Helper()
	look := config.MapLookup(map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": t.TempDir(), "LANG": "C.UTF-8",
		// Must not reach the worker: only the listed variables do.
		"AWS_SECRET_ACCESS_KEY": "host-only",
	})
	opt, err := ConfigHostOptions(look, s.guard, s.llm)
	if err != nil {
		t.Fatalf("ConfigHostOptions: %v", err)
	}
	opt.Executable = ironviseBinary(t)
	opt.Enclave = s.enclave
	if opt.Remote != nil {
		opt.Remote.Roots = s.remoteRoots
	}
	opt.Env = append(opt.Env, s.env...)
	if s.wrap != nil {
		opt.Executable, opt.Args = wrapperBinary(t), append(append([]string{execArg}, s.wrap...), "--", ironviseBinary(t), WorkerArg)
	}
	if s.mitm != "" {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		opt.Executable, opt.Args = self, []string{mitmArg, s.mitm, ironviseBinary(t)}
	}
	if s.exe != "" {
		opt.Executable = s.exe
	}
	logs := &logBuffer{}
	opt.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := NewHost(opt)
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	h.hashPath = s.hashPath
	if s.hashPath == "" && (s.wrap != nil || s.mitm != "") {
		h.hashPath = ironviseBinary(t)
	}
	h.prepare = s.prepare
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h, logs
}

func guardRequest(step int) check.GuardRequest {
	return check.GuardRequest{SessionID: "9b2f5c1e-0000-4000-8000-000000000001", Step: step, Goal: "audit the notes",
		Intent: &intent.Intent{Action: intent.ReadFile, Path: "notes.txt", Justification: "read the notes"}, Flags: []string{"prompt_sensitive_target"}}
}

func review(t testing.TB, h *Host, step int) verdict.Verdict {
	t.Helper()
	return h.Review(context.Background(), guardRequest(step))
}

func wantVerdict(t testing.TB, v verdict.Verdict, d verdict.Decision, code verdict.Code, msgPart string) {
	t.Helper()
	if v.Check != verdict.CheckGuard || v.Decision != d || v.Code != code || !strings.Contains(v.Message, msgPart) {
		t.Fatalf("verdict = %s %s %q; want %s %s containing %q", v.Decision, v.Code, v.Message, d, code, msgPart)
	}
}

// workerPID returns the running worker's pid, or 0.
func workerPID(h *Host) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w == nil {
		return 0
	}
	return h.w.cmd.Process.Pid
}

func workerKey(h *Host) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w == nil {
		return nil
	}
	return bytes.Clone(h.w.key)
}

func killWorker(t testing.TB, h *Host) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w == nil {
		t.Fatal("no worker to kill")
	}
	if err := h.w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Let the kernel finish the process so the next write sees a closed
	// pipe rather than racing the exit.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile("/proc/" + strconv.Itoa(h.w.cmd.Process.Pid) + "/stat"); err != nil || strings.Contains(string(data), ") Z ") {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHostCase44Replies(t *testing.T) {
	cases := []struct {
		reply    string
		decision verdict.Decision
		code     verdict.Code
		msg      string
	}{
		{"ALLOW", verdict.Allow, verdict.GuardAllow, "ALLOW"},
		{"allowed", verdict.Deny, verdict.GuardUnparseable, `"allowed"`},
		{"Deny: off goal", verdict.Deny, verdict.GuardDeny, "off goal"},
		{"ALLOW\nDENY: x", verdict.Allow, verdict.GuardAllow, "ALLOW"},
		{"**ALLOW**", verdict.Deny, verdict.GuardUnparseable, `"**ALLOW**"`},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.reply, "\n", `\n`), func(t *testing.T) {
			t.Parallel()
			s := defaultSetup()
			s.guard.MockReply = tc.reply
			h, _ := newTestHost(t, s)
			wantVerdict(t, review(t, h, 1), tc.decision, tc.code, tc.msg)
		})
	}
}

func TestHostMockGuardDefaultDenies(t *testing.T) {
	// No GUARD_MOCK_REPLY and a script without guard lines: "DENY: mock
	// guard". (Without MOCK_LLM_SCRIPT the built-in demo script would play
	// the guard.)
	h, _ := newTestHost(t, withMockScript(t, `{"role":"agent","content":"{}"}`+"\n"))
	wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardDeny, "mock guard")
}

func TestHostMockScriptGuardLines(t *testing.T) {
	h, _ := newTestHost(t, withMockScript(t, `{"role":"guard","content":"ALLOW"}`+"\n"+`{"role":"guard","content":"DENY: second step leaves the goal"}`+"\n"))
	wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
	wantVerdict(t, review(t, h, 2), verdict.Deny, verdict.GuardDeny, "second step leaves the goal")
	wantVerdict(t, review(t, h, 3), verdict.Deny, verdict.GuardDeny, "mock guard")
}

func TestHostOneWorkerServesManySteps(t *testing.T) {
	h, logs := newTestHost(t, defaultSetup())
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := workerPID(h)
	for step := 1; step <= 5; step++ {
		wantVerdict(t, review(t, h, step), verdict.Allow, verdict.GuardAllow, "ALLOW")
	}
	if workerPID(h) != pid || h.Lost() != 0 || h.Err() != nil {
		t.Fatalf("worker changed (%d → %d) or losses recorded (%d)", pid, workerPID(h), h.Lost())
	}
	// The worker unset GUARD_HMAC_KEY before serving (its startup line is
	// in the host log, copied from its stderr).
	waitForLog(t, logs, "key_env_cleared=true")
}

func waitForLog(t testing.TB, logs *logBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q:\n%s", want, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHostWorkerEnvironment(t *testing.T) {
	h, logs := newTestHost(t, withMITM("envnames"))
	wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
	waitForLog(t, logs, "mitm-env GUARD_HMAC_KEY,GUARD_LLM_BACKEND,GUARD_LLM_MODEL,GUARD_MOCK_REPLY,GUARD_TIMEOUT_SECS,HOME,LANG,PATH\"")
	waitForLog(t, logs, "key_env_cleared=true")
	if strings.Contains(logs.String(), "host-only") {
		t.Fatal("a host-only variable reached the worker")
	}
}

// ollamaGuard is a loopback Ollama server for the guard: the first request
// hangs until the worker is killed, later ones answer ALLOW.
type ollamaGuard struct {
	t     *testing.T
	mu    sync.Mutex
	calls int
}

func (o *ollamaGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.calls++
	n := o.calls
	o.mu.Unlock()
	var body struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Format   string `json:"format"`
		Messages []struct {
			Role, Content string
		} `json:"messages"`
		Options map[string]float64 `json:"options"`
	}
	if r.URL.Path != "/api/chat" || json.NewDecoder(r.Body).Decode(&body) != nil || body.Model != "guard-model" || body.Stream ||
		body.Format != "" || body.Options["temperature"] != 0 || body.Options["num_predict"] != MaxOutputTokens ||
		len(body.Messages) != 2 || body.Messages[0].Role != "system" || !strings.Contains(body.Messages[1].Content, "BEGIN ACTION ") {
		o.t.Errorf("guard request %d has the wrong shape: %s %+v", n, r.URL.Path, body)
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	if n == 1 {
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"model":"guard-model","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"ALLOW"},"done":true,"eval_count":1}`)
}

func TestHostCase45TimeoutThenFreshWorker(t *testing.T) {
	backend := &ollamaGuard{t: t}
	srv := httptest.NewServer(backend)
	defer srv.Close()
	s := defaultSetup()
	s.guard = config.Guard{Required: true, Backend: "ollama", Model: "guard-model", TimeoutSecs: 1}
	s.llm = config.LLM{Backend: "ollama", OllamaBaseURL: srv.URL, OllamaModel: "primary-model"}
	h, _ := newTestHost(t, s)

	start := time.Now()
	v := review(t, h, 1)
	elapsed := time.Since(start)
	wantVerdict(t, v, verdict.Deny, verdict.GuardTimeout, "within 1s")
	if elapsed < 900*time.Millisecond || elapsed > 4*time.Second {
		t.Fatalf("timeout after %v, want about GUARD_TIMEOUT_SECS=1", elapsed)
	}
	if workerPID(h) != 0 {
		t.Fatal("the timed-out worker is still attached")
	}
	// A fresh worker (new process, new key) serves the next step.
	wantVerdict(t, review(t, h, 2), verdict.Allow, verdict.GuardAllow, "ALLOW")
	if h.Lost() != 0 {
		t.Fatalf("a timeout counted as a lost worker (%d)", h.Lost())
	}
}

func TestHostCase46FlippedMAC(t *testing.T) {
	h, _ := newTestHost(t, withMITM("flipmac"))
	wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardProtocolError, "bad MAC")
	if workerPID(h) != 0 || h.Lost() != 0 {
		t.Fatalf("after a protocol error the worker must be dropped (pid %d) without counting a loss (%d)", workerPID(h), h.Lost())
	}
}

func TestHostCase46ReplayedNonce(t *testing.T) {
	h, _ := newTestHost(t, withMITM("replay"))
	wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
	// The attacker replays request 1 in place of request 2: the worker
	// refuses it and the host, expecting nonce 2, denies.
	wantVerdict(t, review(t, h, 2), verdict.Deny, verdict.GuardProtocolError, "replayed_nonce")
}

func TestHostReflectedRequestRejected(t *testing.T) {
	h, _ := newTestHost(t, withMITM("reflect"))
	wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardProtocolError, "bad MAC")
}

func TestHostOversizeResponse(t *testing.T) {
	h, _ := newTestHost(t, withMITM("oversize"))
	wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardProtocolError, "exceeds 1 MiB")
}

func TestHostRequestOverLineLimit(t *testing.T) {
	h, _ := newTestHost(t, defaultSetup())
	wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
	pid := workerPID(h)
	req := guardRequest(2)
	req.Goal = strings.Repeat("g", MaxLineBytes)
	wantVerdict(t, h.Review(context.Background(), req), verdict.Deny, verdict.GuardProtocolError, "line limit")
	// Nothing was sent: the same worker serves the next step, whose nonce
	// skips the unsent one.
	wantVerdict(t, review(t, h, 3), verdict.Allow, verdict.GuardAllow, "ALLOW")
	if workerPID(h) != pid {
		t.Fatal("the worker was replaced after a request that was never sent")
	}
}

func TestHostWorkerCrashRestartOnce(t *testing.T) {
	h, _ := newTestHost(t, defaultSetup())
	wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
	firstKey := workerKey(h)

	killWorker(t, h)
	wantVerdict(t, review(t, h, 2), verdict.Deny, verdict.GuardUnavailable, "")
	if h.Lost() != 1 || h.Err() != nil {
		t.Fatalf("after one loss: Lost %d, Err %v; want 1, nil", h.Lost(), h.Err())
	}
	// Replaced once: a new worker with a new key.
	wantVerdict(t, review(t, h, 3), verdict.Allow, verdict.GuardAllow, "ALLOW")
	if k := workerKey(h); k == nil || bytes.Equal(k, firstKey) {
		t.Fatal("the replacement worker reuses the old key")
	}

	killWorker(t, h)
	wantVerdict(t, review(t, h, 4), verdict.Deny, verdict.GuardUnavailable, "")
	if h.Lost() != 2 || !errors.Is(h.Err(), ErrWorkerLost) {
		t.Fatalf("after two losses: Lost %d, Err %v; want 2, ErrWorkerLost", h.Lost(), h.Err())
	}
	// No third worker: the session must abort.
	wantVerdict(t, review(t, h, 5), verdict.Deny, verdict.GuardUnavailable, "lost 2 times")
	if workerPID(h) != 0 {
		t.Fatal("a third worker was started")
	}
}

func TestHostSpawnFailure(t *testing.T) {
	s := defaultSetup()
	s.exe = filepath.Join(t.TempDir(), "no-such-ironvise")
	h, _ := newTestHost(t, s)
	if err := h.Start(context.Background()); err == nil {
		t.Fatal("Start succeeded with a missing binary")
	}
	wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardUnavailable, "no-such-ironvise")
	if !errors.Is(h.Err(), ErrWorkerLost) {
		t.Fatalf("two failed starts must be two losses: Lost %d", h.Lost())
	}
}

func TestHostWorkerExitsAtOnce(t *testing.T) {
	h, _ := newTestHost(t, withMITM("die"))
	wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardUnavailable, "exit status 3")
}

func TestHostWorkerConfigErrorIsLogged(t *testing.T) {
	// A worker that cannot start its backend exits at once; its reason
	// reaches the host log through stderr.
	s := defaultSetup()
	s.guard = config.Guard{Required: true, Backend: "openai", TimeoutSecs: 10} // no model
	s.llm = config.LLM{OpenAIBaseURL: "http://127.0.0.1:9/v1"}
	h, logs := newTestHost(t, s)
	wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardUnavailable, "exit status 2")
	waitForLog(t, logs, "GUARD_LLM_MODEL is not set")
}

func TestHostBackendError(t *testing.T) {
	// An LLM failure is guard_backend_error; the worker stays.
	script := filepath.Join(t.TempDir(), "script.jsonl")
	_ = os.WriteFile(script, []byte(`{"role":"guard","error":"HTTP 503"}`+"\n"+`{"role":"guard","content":"ALLOW"}`), 0o600)
	s := defaultSetup()
	s.guard.MockReplySet, s.guard.MockReply = false, ""
	s.llm.MockScript, s.llm.MockScriptIsSet = script, true
	h, _ := newTestHost(t, s)
	wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardBackendError, "HTTP 503")
	pid := workerPID(h)
	wantVerdict(t, review(t, h, 2), verdict.Allow, verdict.GuardAllow, "ALLOW")
	if workerPID(h) != pid {
		t.Fatal("a backend error replaced the worker")
	}
}

func TestHostContextCancelled(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.jsonl")
	_ = os.WriteFile(script, []byte(`{"role":"guard","content":"ALLOW","delay_ms":20000}`), 0o600)
	s := defaultSetup()
	s.guard.MockReplySet = false
	s.llm.MockScript, s.llm.MockScriptIsSet = script, true
	h, _ := newTestHost(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	wantVerdict(t, h.Review(ctx, guardRequest(1)), verdict.Deny, verdict.GuardTimeout, "cancelled")
	if time.Since(start) > 3*time.Second {
		t.Fatalf("cancellation took %v", time.Since(start))
	}
}

func TestHostStderrCapped(t *testing.T) {
	// The worker's stderr goes to the host log, at most 64 KiB per session.
	h, logs := newTestHost(t, defaultSetup())
	wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go h.copyStderr(r, done, &lineTail{}, 0)
	line := strings.Repeat("n", 1000) + "\n"
	for range 200 {
		_, _ = w.WriteString(line)
	}
	_ = w.Close()
	<-done
	if got := strings.Count(logs.String(), strings.Repeat("n", 1000)); got >= 66 || got < 60 {
		t.Fatalf("%d lines of 1000 bytes logged; want the 64 KiB cap (about 64)", got)
	}
	if !strings.Contains(logs.String(), "per-session cap") {
		t.Fatal("no warning that stderr was capped")
	}
}

func TestHostClosed(t *testing.T) {
	h, _ := newTestHost(t, defaultSetup())
	wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
	w := h.w
	if err := h.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if w.cmd.ProcessState == nil || !w.cmd.ProcessState.Exited() || w.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("worker state after Close: %v; want a clean exit on stdin EOF", w.cmd.ProcessState)
	}
	wantVerdict(t, review(t, h, 2), verdict.Deny, verdict.GuardUnavailable, "closed")
	if err := h.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}

func TestHostNilIntent(t *testing.T) {
	h, _ := newTestHost(t, defaultSetup())
	wantVerdict(t, h.Review(context.Background(), check.GuardRequest{Step: 1}), verdict.Deny, verdict.GuardProtocolError, "no intent")
}

// BenchmarkHostRoundTrip measures one guard review across the real process
// boundary with the mock backend: encode, MAC, pipe, worker verify, decode,
// prompt, mock reply, MAC, pipe, host verify, decode.
func BenchmarkHostRoundTrip(b *testing.B) {
	h, _ := newTestHost(b, defaultSetup())
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	req := guardRequest(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v := h.Review(context.Background(), req); v.Code != verdict.GuardAllow {
			b.Fatalf("verdict %s %q", v.Code, v.Message)
		}
	}
}
