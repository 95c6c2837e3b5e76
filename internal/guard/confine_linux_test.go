//go:build linux

package guard

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/verdict"
)

// The worker confines itself before it serves
// (docs/design/agent.md#guard-worker: seccomp allowlist suited to an HTTPS
// client, Landlock with no write access). These tests run the real ironvise
// binary and check, from the outside, that the confinement is in force and
// that the guard still works through it. What the confinement refuses is
// tested attempt by attempt in sandbox/native (TestConfineSelf).

// workerStatus returns the running worker's /proc/<pid>/status.
func workerStatus(t *testing.T, h *Host) string {
	t.Helper()
	pid := workerPID(h)
	if pid == 0 {
		t.Fatal("no worker running")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantConfined checks the worker's kernel state and its log line.
func wantConfined(t *testing.T, h *Host, logs *logBuffer) {
	t.Helper()
	st := workerStatus(t, h)
	for _, want := range []string{"\nSeccomp:\t2\n", "\nNoNewPrivs:\t1\n"} {
		if !strings.Contains(st, want) {
			t.Errorf("worker status lacks %q:\n%s", strings.TrimSpace(want), st)
		}
	}
	// The worker's own log line, as the host copies it from its stderr.
	waitForLog(t, logs, `msg=\"guard worker confined\" profile=https-client landlock_abi=`)
	waitForLog(t, logs, `no_new_privs=true`)
}

func TestHostMockWorkerConfined(t *testing.T) {
	h, logs := newTestHost(t, defaultSetup())
	wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
	wantConfined(t, h, logs)
}

// openAIGuard is a loopback OpenAI-compatible chat completions server that
// answers ALLOW to requests of the guard's shape.
type openAIGuard struct {
	t     *testing.T
	calls atomic.Int32
}

func (o *openAIGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model       string  `json:"model"`
		Temperature float64 `json:"temperature"`
		MaxTokens   int     `json:"max_tokens"`
		Messages    []struct {
			Role, Content string
		} `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-guard-test" ||
		json.NewDecoder(r.Body).Decode(&body) != nil || body.Model != "guard-model" || body.Temperature != 0 ||
		body.MaxTokens != MaxOutputTokens || len(body.Messages) != 2 || !strings.Contains(body.Messages[1].Content, "BEGIN ACTION ") {
		o.t.Errorf("guard request has the wrong shape: %s %+v", r.URL.Path, body)
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	o.calls.Add(1)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1735689600,"model":"guard-model",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":"ALLOW","refusal":null},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":90,"completion_tokens":1,"total_tokens":91}}`)
}

func TestHostConfinedWorkerOpenAI(t *testing.T) {
	backend := &openAIGuard{t: t}
	srv := httptest.NewServer(backend)
	defer srv.Close()
	s := defaultSetup()
	s.guard = config.Guard{Required: true, Backend: "openai", Model: "guard-model", TimeoutSecs: 10}
	// localhost, not 127.0.0.1: the confined worker resolves the name
	// through /etc/hosts and nsswitch.conf, which it may still read.
	s.llm = config.LLM{Backend: "openai", OpenAIBaseURL: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/v1",
		OpenAIModel: "primary-model", OpenAIKey: config.NewSecret("sk-guard-test")}
	h, logs := newTestHost(t, s)
	for step := 1; step <= 3; step++ {
		wantVerdict(t, review(t, h, step), verdict.Allow, verdict.GuardAllow, "ALLOW")
	}
	if n := backend.calls.Load(); n != 3 {
		t.Fatalf("%d model calls; want 3", n)
	}
	wantConfined(t, h, logs)
}
