package llm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/config"
)

// These tests run each backend against a real loopback server that is down,
// hangs, or fails every request, and check what a newcomer reads: the final
// error names the backend, its base URL and what to check, and each retry
// warning says which attempt of how many failed and why.

// urlVar is the variable that sets a wire's base URL.
func urlVar(w wire) string { return strings.ToUpper(w.name) + "_BASE_URL" }

// syncBuffer is a goroutine-safe log sink.
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

// loggedOptions are testOptions with the warnings captured as text lines.
func loggedOptions(logs io.Writer) Options {
	opt := testOptions(&clock{})
	opt.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return opt
}

func wantAll(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s %q\nlacks %q", what, s, p)
		}
	}
}

// retryLines returns the retry warnings of a log.
func retryLines(logs string) []string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "retrying in") {
			out = append(out, l)
		}
	}
	return out
}

func TestServerDownNamesURLAndWhatToCheck(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.NotFoundHandler())
			base := w.base(srv.URL)
			srv.Close() // a closed port: nothing listens there any more
			var logs syncBuffer
			c, err := w.newClient(base, config.NewSecret(testKey), loggedOptions(&logs))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Complete(context.Background(), basicRequest)
			var ce *CallError
			if !errors.As(err, &ce) || ce.Backend != w.name || ce.BaseURL != base {
				t.Fatalf("err = %v; want a CallError for %s at %s", err, w.name, base)
			}
			want := "llm: the " + w.name + " backend at " + base + " did not answer (4 attempts): connection refused; " +
				"check that the server is running and that " + urlVar(w) + " points at it"
			if err.Error() != want {
				t.Errorf("error\n got %q\nwant %q", err, want)
			}
			lines := retryLines(logs.String())
			if len(lines) != DefaultMaxAttempts-1 {
				t.Fatalf("%d retry warnings, want %d (one per retry): %s", len(lines), DefaultMaxAttempts-1, logs.String())
			}
			for i, l := range lines {
				wantAll(t, "retry warning", l, "llm: "+w.name+" at "+base+": attempt "+string(rune('1'+i))+" of 4 failed (connection refused); retrying in ")
			}
		})
	}
}

func TestSlowServerHonoursTheTimeout(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, w, fixed(basicRequest), answer{hang: true}, answer{text: "late"})
			opt := testOptions(&clock{})
			opt.Timeout, opt.TimeoutVar = 150*time.Millisecond, "LLM_TIMEOUT_SECS"
			c := newTestClient(t, w, srv, opt)
			_, err := c.Complete(context.Background(), basicRequest)
			if !errors.Is(err, context.DeadlineExceeded) || srv.callCount() != 1 {
				t.Fatalf("err = %v after %d calls; want the time limit after 1", err, srv.callCount())
			}
			want := "llm: the " + w.name + " backend at " + w.base(srv.srv.URL) + " did not answer within 150ms; " +
				"check that the server is running and that " + urlVar(w) + " points at it, or raise LLM_TIMEOUT_SECS for a slow model"
			if err.Error() != want {
				t.Errorf("error\n got %q\nwant %q", err, want)
			}
		})
	}
}

func TestCallerDeadlineIsNotBlamedOnTheSetting(t *testing.T) {
	w := wires[1]
	srv := newAPIServer(t, w, fixed(basicRequest), answer{hang: true})
	opt := testOptions(&clock{})
	opt.Timeout, opt.TimeoutVar = time.Hour, "LLM_TIMEOUT_SECS"
	c := newTestClient(t, w, srv, opt)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Complete(ctx, basicRequest)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer before the caller's deadline") ||
		strings.Contains(err.Error(), "LLM_TIMEOUT_SECS") {
		t.Fatalf("err = %v; want the caller's deadline, not LLM_TIMEOUT_SECS", err)
	}
}

// TestTimeoutFromConfiguration runs New with LLM_TIMEOUT_SECS as config
// reads it, against a server that never answers.
func TestTimeoutFromConfiguration(t *testing.T) {
	cfg, err := config.Load(config.MapLookup(map[string]string{
		"HOME": "/h", "LLM_BACKEND": "ollama", "OLLAMA_MODEL": "llama3.1:8b", "LLM_TIMEOUT_SECS": "1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := newAPIServer(t, wires[0], func(int) Request { return basicRequest }, answer{hang: true})
	cfg.LLM.OllamaBaseURL = srv.srv.URL
	c, err := New(cfg.LLM, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), basicRequest)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer within 1s") ||
		!strings.Contains(err.Error(), "LLM_TIMEOUT_SECS") {
		t.Fatalf("err = %v; want the 1 s limit of LLM_TIMEOUT_SECS", err)
	}
}

func TestServerErrorStorm(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			// No answer scripted: the server answers 500 to every request.
			srv := newAPIServer(t, w, fixed(basicRequest))
			var logs syncBuffer
			c := newTestClient(t, w, srv, loggedOptions(&logs))
			_, err := c.Complete(context.Background(), basicRequest)
			var se *StatusError
			if !errors.As(err, &se) || se.StatusCode != 500 || srv.callCount() != DefaultMaxAttempts {
				t.Fatalf("err = %v after %d calls; want the 500 after %d", err, srv.callCount(), DefaultMaxAttempts)
			}
			wantAll(t, "error", err.Error(),
				"llm: the "+w.name+" backend at "+w.base(srv.srv.URL)+" answered with a server error (4 attempts): HTTP 500 Internal Server Error",
				"no answer scripted", "check its logs")
			lines := retryLines(logs.String())
			if len(lines) != DefaultMaxAttempts-1 {
				t.Fatalf("%d retry warnings, want %d: %s", len(lines), DefaultMaxAttempts-1, logs.String())
			}
			wantAll(t, "last retry warning", lines[len(lines)-1], "attempt 3 of 4 failed (HTTP 500 Internal Server Error: ")
		})
	}
}

// TestShortKeyOnlyAsWholeToken: a one-letter key must not turn every "k"
// of an error into [redacted], and must still be hidden where the server
// echoes it.
func TestShortKeyOnlyAsWholeToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(rw, `{"error":{"message":"Incorrect API key provided: k. Check the key and ask for a new one."}}`)
	}))
	defer srv.Close()
	c, err := NewOpenAI(srv.URL+"/v1", config.NewSecret("k"), "m", testOptions(&clock{}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), basicRequest)
	want := "HTTP 401 Unauthorized: Incorrect API key provided: [redacted]. Check the key and ask for a new one.; check OPENAI_API_KEY"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("err = %v\nwant it to end %q", err, want)
	}
}

func TestWithWait(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	inner, err := NewOllama(srv.URL, "m", testOptions(&clock{}))
	if err != nil {
		t.Fatal(err)
	}
	var started, ended int
	c := WithWait(inner, func() func() {
		started++
		return func() { ended++ }
	})
	if _, err := c.Complete(context.Background(), basicRequest); err == nil {
		t.Fatal("want the failure of the closed port")
	}
	if started != 1 || ended != 1 {
		t.Fatalf("wait started %d, ended %d; want 1 and 1, also on failure", started, ended)
	}
	if c.Backend() != BackendOllama || c.Model() != "m" || !strings.Contains(fmtString(c), "llm.ollama(m at ") {
		t.Fatalf("wrapper hides the client: %s %s %s", c.Backend(), c.Model(), fmtString(c))
	}
}

func fmtString(c Client) string {
	s, _ := c.(interface{ String() string })
	if s == nil {
		return ""
	}
	return s.String()
}

// TestGuardTimeoutNamesItsVariable: the guard worker's budget comes from
// GUARD_TIMEOUT_SECS, and a guard call that runs out of it says so.
func TestGuardTimeoutNamesItsVariable(t *testing.T) {
	w := wires[0]
	srv := newAPIServer(t, w, fixed(basicRequest), answer{hang: true})
	g := config.Guard{Required: true, Backend: BackendOllama, Model: "llama3.1:8b", TimeoutSecs: 600}
	c, err := NewGuard(g, config.LLM{OllamaBaseURL: srv.srv.URL}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The worker's budget, as guard.LLMTimeout gives it, is the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Complete(ctx, basicRequest)
	want := "llm: the ollama backend at " + srv.srv.URL + " did not answer in the time GUARD_TIMEOUT_SECS allows; " +
		"check that the server is running and that OLLAMA_BASE_URL points at it, or raise GUARD_TIMEOUT_SECS for a slow model"
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != want {
		t.Fatalf("err\n got %v\nwant %s", err, want)
	}
}
