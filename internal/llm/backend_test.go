package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/verdict"
)

// These tests run every HTTP backend against a real HTTP server on
// loopback that speaks the backend's wire format: it validates the request
// (method, path, headers, JSON body fields) and answers in the API's
// documented response shape.

const testKey = "sk-test-7f3c9a1e5b2d4c6a8e0f1b3d5a7c9e1f"

// wire describes one backend's API for the test server.
type wire struct {
	name string
	// base turns the server URL into the configured base URL.
	base      func(srv string) string
	newClient func(base string, key config.Secret, opt Options) (Client, error)
	path      string
	// check validates headers and body of one request.
	check func(r *http.Request, body map[string]any, want Request) error
	ok    func(text string, usage bool) string
	fail  func(msg string) string
	// reported is the model name the ok body reports.
	reported string
}

var wires = []wire{
	{
		name: "ollama",
		base: func(s string) string { return s },
		newClient: func(base string, _ config.Secret, opt Options) (Client, error) {
			return NewOllama(base, "llama3.1:8b", opt)
		},
		path: "/api/chat",
		check: func(r *http.Request, b map[string]any, want Request) error {
			if r.Header.Get("Authorization") != "" {
				return errors.New("ollama request carries an Authorization header")
			}
			if b["model"] != "llama3.1:8b" || b["stream"] != false {
				return fmt.Errorf("model/stream = %v/%v", b["model"], b["stream"])
			}
			if err := checkMessages(b["messages"], want, true); err != nil {
				return err
			}
			if want.JSON != (b["format"] == "json") {
				return fmt.Errorf("format = %v, JSON = %v", b["format"], want.JSON)
			}
			opts, _ := b["options"].(map[string]any)
			if temp, ok := opts["temperature"]; !ok || temp != want.Temperature {
				return fmt.Errorf("options.temperature = %v (present %v)", temp, ok)
			}
			if want.MaxTokens > 0 && opts["num_predict"] != float64(want.MaxTokens) {
				return fmt.Errorf("options.num_predict = %v", opts["num_predict"])
			}
			return onlyKeys(b, "model", "messages", "stream", "format", "options")
		},
		ok: func(text string, usage bool) string {
			u := ""
			if usage {
				u = `,"prompt_eval_count":12,"prompt_eval_duration":1000,"eval_count":7,"eval_duration":1000`
			}
			return `{"model":"llama3.1:8b","created_at":"2025-01-01T00:00:00.000Z","message":{"role":"assistant","content":` +
				quote(text) + `},"done_reason":"stop","done":true,"total_duration":5000,"load_duration":100` + u + `}`
		},
		fail:     func(msg string) string { return `{"error":` + quote(msg) + `}` },
		reported: "llama3.1:8b",
	},
	{
		name: "openai",
		base: func(s string) string { return s + "/v1" },
		newClient: func(base string, key config.Secret, opt Options) (Client, error) {
			return NewOpenAI(base, key, "gpt-4o-mini", opt)
		},
		path: "/v1/chat/completions",
		check: func(r *http.Request, b map[string]any, want Request) error {
			if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
				return fmt.Errorf("Authorization = %q", got)
			}
			if b["model"] != "gpt-4o-mini" {
				return fmt.Errorf("model = %v", b["model"])
			}
			if err := checkMessages(b["messages"], want, true); err != nil {
				return err
			}
			if temp, ok := b["temperature"]; !ok || temp != want.Temperature {
				return fmt.Errorf("temperature = %v (present %v)", temp, ok)
			}
			rf, _ := b["response_format"].(map[string]any)
			if want.JSON != (rf["type"] == "json_object") {
				return fmt.Errorf("response_format = %v, JSON = %v", b["response_format"], want.JSON)
			}
			if want.MaxTokens > 0 && b["max_tokens"] != float64(want.MaxTokens) {
				return fmt.Errorf("max_tokens = %v", b["max_tokens"])
			}
			return onlyKeys(b, "model", "messages", "temperature", "max_tokens", "response_format", "stream")
		},
		ok: func(text string, usage bool) string {
			u := ""
			if usage {
				u = `,"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}`
			}
			return `{"id":"chatcmpl-abc","object":"chat.completion","created":1735689600,"model":"gpt-4o-mini-2024-07-18",` +
				`"choices":[{"index":0,"message":{"role":"assistant","content":` + quote(text) + `,"refusal":null},"logprobs":null,"finish_reason":"stop"}]` + u + `}`
		},
		fail: func(msg string) string {
			return `{"error":{"message":` + quote(msg) + `,"type":"invalid_request_error","param":null,"code":null}}`
		},
		reported: "gpt-4o-mini-2024-07-18",
	},
	{
		name: "anthropic",
		base: func(s string) string { return s },
		newClient: func(base string, key config.Secret, opt Options) (Client, error) {
			return NewAnthropic(base, key, "claude-test-1", opt)
		},
		path: "/v1/messages",
		check: func(r *http.Request, b map[string]any, want Request) error {
			if got := r.Header.Get("x-api-key"); got != testKey {
				return fmt.Errorf("x-api-key = %q", got)
			}
			if got := r.Header.Get("anthropic-version"); got != AnthropicVersion {
				return fmt.Errorf("anthropic-version = %q", got)
			}
			if b["model"] != "claude-test-1" {
				return fmt.Errorf("model = %v", b["model"])
			}
			if want.System != "" && b["system"] != want.System {
				return fmt.Errorf("system = %v", b["system"])
			}
			if err := checkMessages(b["messages"], want, false); err != nil {
				return err
			}
			wantMax := float64(want.MaxTokens)
			if want.MaxTokens == 0 {
				wantMax = DefaultMaxTokens
			}
			if b["max_tokens"] != wantMax {
				return fmt.Errorf("max_tokens = %v, want %v", b["max_tokens"], wantMax)
			}
			if temp, ok := b["temperature"]; !ok || temp != want.Temperature {
				return fmt.Errorf("temperature = %v (present %v)", temp, ok)
			}
			return onlyKeys(b, "model", "max_tokens", "system", "messages", "temperature")
		},
		ok: func(text string, usage bool) string {
			u := ""
			if usage {
				u = `,"usage":{"input_tokens":12,"output_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}`
			}
			return `{"id":"msg_01","type":"message","role":"assistant","model":"claude-test-1-20250101","content":[{"type":"text","text":` +
				quote(text) + `}],"stop_reason":"end_turn","stop_sequence":null` + u + `}`
		},
		fail: func(msg string) string {
			return `{"type":"error","error":{"type":"api_error","message":` + quote(msg) + `}}`
		},
		reported: "claude-test-1-20250101",
	},
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// checkMessages compares the wire messages with the request; systemInline
// says whether the API carries the system prompt as the first message.
func checkMessages(v any, want Request, systemInline bool) error {
	msgs, ok := v.([]any)
	if !ok {
		return fmt.Errorf("messages is %T", v)
	}
	var exp []map[string]any
	if systemInline && want.System != "" {
		exp = append(exp, map[string]any{"role": "system", "content": want.System})
	}
	for _, m := range want.Messages {
		exp = append(exp, map[string]any{"role": string(m.Role), "content": m.Content})
	}
	if len(msgs) != len(exp) {
		return fmt.Errorf("got %d messages, want %d", len(msgs), len(exp))
	}
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] != exp[i]["role"] || mm["content"] != exp[i]["content"] || len(mm) != 2 {
			return fmt.Errorf("message %d = %v, want %v", i, mm, exp[i])
		}
	}
	return nil
}

func onlyKeys(b map[string]any, allowed ...string) error {
	for k := range b {
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			return fmt.Errorf("unexpected body key %q", k)
		}
	}
	return nil
}

// answer is one scripted HTTP answer of the test server.
type answer struct {
	status int
	header map[string]string
	body   string // raw body; "" with text set means ok(text)
	text   string
	hang   bool // block until the client gives up
}

// apiServer is a loopback HTTP server speaking one backend's wire format.
type apiServer struct {
	t    *testing.T
	w    wire
	srv  *httptest.Server
	want func(call int) Request

	mu      sync.Mutex
	answers []answer
	calls   int              // guarded by mu
	bodies  []map[string]any // guarded by mu
}

func newAPIServer(t *testing.T, w wire, want func(call int) Request, answers ...answer) *apiServer {
	t.Helper()
	s := &apiServer{t: t, w: w, want: want, answers: answers}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *apiServer) serve(rw http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	call := s.calls
	s.calls++
	var a answer
	if call < len(s.answers) {
		a = s.answers[call]
	} else {
		a = answer{status: 500, body: s.w.fail("test server: no answer scripted")}
	}
	s.mu.Unlock()

	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	err := json.Unmarshal(raw, &body)
	switch {
	case r.Method != http.MethodPost:
		err = fmt.Errorf("method %s", r.Method)
	case r.URL.Path != s.w.path:
		err = fmt.Errorf("path %q, want %q", r.URL.Path, s.w.path)
	case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		err = fmt.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
	case err == nil:
		err = s.w.check(r, body, s.want(call))
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if err != nil {
		s.t.Errorf("%s request %d: %v", s.w.name, call, err)
		http.Error(rw, s.w.fail(err.Error()), http.StatusBadRequest)
		return
	}
	if a.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range a.header {
		rw.Header().Set(k, v)
	}
	rw.Header().Set("Content-Type", "application/json")
	if a.status == 0 {
		a.status = http.StatusOK
	}
	rw.WriteHeader(a.status)
	if a.body == "" {
		a.body = s.w.ok(a.text, true)
	}
	_, _ = io.WriteString(rw, a.body)
}

func (s *apiServer) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// clock records the waits the transport asks for instead of sleeping.
type clock struct {
	mu     sync.Mutex
	slept  []time.Duration // guarded by mu
	nowVal time.Time
}

func (c *clock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.slept = append(c.slept, d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *clock) now() time.Time {
	if c.nowVal.IsZero() {
		return time.Now()
	}
	return c.nowVal
}

func (c *clock) waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

func testOptions(c *clock) Options {
	return Options{
		Retry: RetryPolicy{BaseDelay: 40 * time.Millisecond, MaxDelay: 400 * time.Millisecond, MaxRetryAfter: 5 * time.Second},
		Sleep: c.sleep, Now: c.now,
	}
}

var basicRequest = Request{
	System:      "You are an audit agent.",
	Messages:    []Message{{Role: RoleUser, Content: "Step 1: propose an action."}},
	JSON:        true,
	Temperature: 0,
	MaxTokens:   512,
}

func fixed(r Request) func(int) Request { return func(int) Request { return r } }

func newTestClient(t *testing.T, w wire, srv *apiServer, opt Options) Client {
	t.Helper()
	c, err := w.newClient(w.base(srv.srv.URL), config.NewSecret(testKey), opt)
	if err != nil {
		t.Fatalf("new %s client: %v", w.name, err)
	}
	return c
}

func TestBackendSuccess(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, w, fixed(basicRequest), answer{text: `{"action":"complete"}`})
			c := newTestClient(t, w, srv, testOptions(&clock{}))
			resp, err := c.Complete(context.Background(), basicRequest)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Text != `{"action":"complete"}` {
				t.Errorf("text = %q", resp.Text)
			}
			if want := (Usage{12, 7, true}); resp.Usage != want {
				t.Errorf("usage = %+v, want %+v", resp.Usage, want)
			}
			if resp.Model != w.reported {
				t.Errorf("model = %q, want the model the API reported, %q", resp.Model, w.reported)
			}
			if c.Backend() != w.name {
				t.Errorf("backend = %q", c.Backend())
			}
		})
	}
}

func TestBackendGuardShapedRequest(t *testing.T) {
	// The guard's call: plain text (no JSON mode), 64 tokens, no history.
	req := Request{Kind: KindGuard, System: "review", Messages: []Message{{Role: RoleUser, Content: "BEGIN GOAL x"}}, MaxTokens: 64}
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, w, fixed(req), answer{body: w.ok("ALLOW", false)})
			c := newTestClient(t, w, srv, testOptions(&clock{}))
			resp, err := c.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Text != "ALLOW" || resp.Usage.Reported {
				t.Errorf("got %q usage %+v; want ALLOW with no usage reported", resp.Text, resp.Usage)
			}
		})
	}
}

func TestBackendRetryAfterSeconds(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, w, fixed(basicRequest),
				answer{status: 429, header: map[string]string{"Retry-After": "2"}, body: w.fail("rate limited")},
				answer{text: "ok"})
			clk := &clock{}
			c := newTestClient(t, w, srv, testOptions(clk))
			resp, err := c.Complete(context.Background(), basicRequest)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Text != "ok" || srv.callCount() != 2 {
				t.Errorf("text %q after %d calls; want ok after 2", resp.Text, srv.callCount())
			}
			if got := clk.waits(); len(got) != 1 || got[0] != 2*time.Second {
				t.Errorf("waits = %v, want [2s] (the server's Retry-After, not the backoff)", got)
			}
		})
	}
}

func TestBackendRetryAfterDateAndCap(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	cases := []struct {
		name, value string
		want        time.Duration
	}{
		{"http date", now.Add(3 * time.Second).UTC().Format(http.TimeFormat), 3 * time.Second},
		{"date in the past", now.Add(-time.Hour).UTC().Format(http.TimeFormat), 0},
		{"capped", "86400", 5 * time.Second}, // MaxRetryAfter of testOptions
	}
	w := wires[1]
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, w, fixed(basicRequest),
				answer{status: 503, header: map[string]string{"Retry-After": tc.value}, body: w.fail("overloaded")},
				answer{text: "ok"})
			clk := &clock{nowVal: now}
			c := newTestClient(t, w, srv, testOptions(clk))
			if _, err := c.Complete(context.Background(), basicRequest); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if got := clk.waits(); len(got) != 1 || got[0] != tc.want {
				t.Errorf("waits = %v, want [%v]", got, tc.want)
			}
		})
	}
}

func TestBackend5xxThenSuccess(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, w, fixed(basicRequest),
				answer{status: 500, body: w.fail("internal")},
				answer{status: 502, body: "<html>bad gateway</html>"},
				answer{text: "ok"})
			clk := &clock{}
			c := newTestClient(t, w, srv, testOptions(clk))
			resp, err := c.Complete(context.Background(), basicRequest)
			if err != nil || resp.Text != "ok" {
				t.Fatalf("Complete = %q, %v", resp.Text, err)
			}
			// Exponential backoff with equal jitter: [base/2, base], then
			// [base, 2·base].
			got := clk.waits()
			if len(got) != 2 || got[0] < 20*time.Millisecond || got[0] > 40*time.Millisecond ||
				got[1] < 40*time.Millisecond || got[1] > 80*time.Millisecond {
				t.Errorf("waits = %v, want one in [20ms,40ms] then one in [40ms,80ms]", got)
			}
		})
	}
}

func TestBackendRetryBudgetExhausted(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			var as []answer
			for range 10 {
				as = append(as, answer{status: 503, body: w.fail("overloaded")})
			}
			srv := newAPIServer(t, w, fixed(basicRequest), as...)
			clk := &clock{}
			c := newTestClient(t, w, srv, testOptions(clk))
			_, err := c.Complete(context.Background(), basicRequest)
			var se *StatusError
			if !errors.As(err, &se) || se.StatusCode != 503 {
				t.Fatalf("err = %v, want a 503 StatusError", err)
			}
			if !strings.Contains(err.Error(), "(4 attempts)") || !strings.Contains(err.Error(), "overloaded") {
				t.Errorf("err = %q, want the attempt count and the API's message", err)
			}
			if srv.callCount() != DefaultMaxAttempts || len(clk.waits()) != DefaultMaxAttempts-1 {
				t.Errorf("%d calls, %d waits; want %d and %d", srv.callCount(), len(clk.waits()), DefaultMaxAttempts, DefaultMaxAttempts-1)
			}
		})
	}
}

func TestBackendNoRetryOn4xx(t *testing.T) {
	for _, w := range wires {
		for _, status := range []int{400, 401, 404, 422} {
			t.Run(fmt.Sprintf("%s/%d", w.name, status), func(t *testing.T) {
				t.Parallel()
				srv := newAPIServer(t, w, fixed(basicRequest), answer{status: status, body: w.fail("nope")}, answer{text: "ok"})
				clk := &clock{}
				c := newTestClient(t, w, srv, testOptions(clk))
				_, err := c.Complete(context.Background(), basicRequest)
				var se *StatusError
				if !errors.As(err, &se) || se.StatusCode != status {
					t.Fatalf("err = %v, want StatusError %d", err, status)
				}
				if srv.callCount() != 1 || len(clk.waits()) != 0 {
					t.Errorf("%d calls, %d waits; want 1 and 0", srv.callCount(), len(clk.waits()))
				}
				if status == 401 && w.name != "ollama" && !strings.Contains(err.Error(), strings.ToUpper(w.name)+"_API_KEY") {
					t.Errorf("401 error %q does not name the key variable", err)
				}
				if status == 404 && !strings.Contains(err.Error(), strings.ToUpper(w.name)+"_MODEL") {
					t.Errorf("404 error %q does not name the model variable", err)
				}
			})
		}
	}
}

func TestBackendTimeout(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, w, fixed(basicRequest), answer{hang: true}, answer{text: "late"})
			c := newTestClient(t, w, srv, testOptions(&clock{}))
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.Complete(ctx, basicRequest)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want context.DeadlineExceeded", err)
			}
			if time.Since(start) > 5*time.Second || srv.callCount() != 1 {
				t.Errorf("took %v with %d calls; want prompt failure after 1 call", time.Since(start), srv.callCount())
			}
		})
	}
}

func TestBackendDefaultTimeout(t *testing.T) {
	// A context without a deadline still gets one: Options.Timeout.
	w := wires[0]
	srv := newAPIServer(t, w, fixed(basicRequest), answer{hang: true})
	opt := testOptions(&clock{})
	opt.Timeout = 100 * time.Millisecond
	c := newTestClient(t, w, srv, opt)
	if _, err := c.Complete(context.Background(), basicRequest); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

func TestBackendRetryWouldPassDeadline(t *testing.T) {
	w := wires[1]
	srv := newAPIServer(t, w, fixed(basicRequest),
		answer{status: 429, header: map[string]string{"Retry-After": "4"}, body: w.fail("slow down")}, answer{text: "ok"})
	clk := &clock{}
	c := newTestClient(t, w, srv, testOptions(clk))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := c.Complete(ctx, basicRequest)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 429 || len(clk.waits()) != 0 {
		t.Fatalf("err = %v after waits %v; want the 429 at once, no wait", err, clk.waits())
	}
}

func TestBackendMalformedBody(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, w, fixed(basicRequest), answer{body: `{"unexpected": [`}, answer{text: "ok"})
			c := newTestClient(t, w, srv, testOptions(&clock{}))
			_, err := c.Complete(context.Background(), basicRequest)
			if !errors.Is(err, ErrBadResponse) || srv.callCount() != 1 {
				t.Fatalf("err = %v after %d calls, want ErrBadResponse after 1", err, srv.callCount())
			}
		})
	}
}

func TestBackendConnectionRefusedRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there any more
	clk := &clock{}
	c, err := NewOllama(base, "m", testOptions(clk))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), basicRequest)
	if err == nil || len(clk.waits()) != DefaultMaxAttempts-1 {
		t.Fatalf("err = %v after %d waits; want failure after %d retries", err, len(clk.waits()), DefaultMaxAttempts-1)
	}
}

// repairParse is the schema check as the agent loop runs it.
func repairParse(s string) error {
	_, err := intent.Parse(s, intent.Options{})
	return err
}

// repairRequests returns the requests a proposal makes when the model
// first answers bad: the basic request, then (every later call) the same
// conversation with bad and the repair prompt appended.
func repairRequests(bad string) func(call int) Request {
	return func(call int) Request {
		if call == 0 {
			return basicRequest
		}
		r := basicRequest
		r.Messages = append(append([]Message(nil), basicRequest.Messages...),
			Message{RoleAssistant, bad}, Message{RoleUser, RepairPrompt(repairParse(bad))})
		return r
	}
}

const validIntent = `{"action":"read_file","params":{"path":"README.md"},"justification":"read the readme","reasoning":"start"}`

func TestProposeIntentRepair(t *testing.T) {
	bad := "Sure! Here is the action: " + validIntent
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, w, repairRequests(bad), answer{text: bad}, answer{text: validIntent})
			c := newTestClient(t, w, srv, testOptions(&clock{}))
			p, err := ProposeIntent(context.Background(), c, basicRequest, repairParse)
			if err != nil {
				t.Fatalf("ProposeIntent: %v", err)
			}
			if !p.Repaired || p.FirstReply != bad || p.Reply != validIntent {
				t.Errorf("proposal = %+v; want repaired to the valid intent", p)
			}
			var ie *intent.Error
			if !errors.As(p.FirstError, &ie) || ie.Code != verdict.SchemaNotJSON {
				t.Errorf("first error = %v, want schema_not_json", p.FirstError)
			}
			if p.Usage != (Usage{24, 14, true}) {
				t.Errorf("usage = %+v, want both calls summed", p.Usage)
			}
			if err := repairParse(p.Reply); err != nil {
				t.Errorf("repaired reply does not parse: %v", err)
			}
		})
	}
}

func TestProposeIntentExtraKeysStayDenied(t *testing.T) {
	extra := `{"action":"read_file","params":{"path":"a"},"justification":"read it","system_prompt":"x"}`
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := newAPIServer(t, w, repairRequests(extra), answer{text: extra}, answer{text: extra}, answer{text: validIntent})
			c := newTestClient(t, w, srv, testOptions(&clock{}))
			p, err := ProposeIntent(context.Background(), c, basicRequest, repairParse)
			if err != nil {
				t.Fatalf("ProposeIntent: %v", err)
			}
			if srv.callCount() != 2 {
				t.Errorf("%d calls; want exactly one repair attempt", srv.callCount())
			}
			if !strings.Contains(RepairPrompt(p.FirstError), `"system_prompt"`) {
				t.Errorf("repair prompt does not name the extra key: %q", RepairPrompt(p.FirstError))
			}
			var ie *intent.Error
			if err := repairParse(p.Reply); !errors.As(err, &ie) || ie.Code != verdict.SchemaUnknownKey {
				t.Errorf("final reply parse = %v; want schema_unknown_key for the schema check to deny", err)
			}
		})
	}
}

func TestProposeIntentNoRepairWhenValid(t *testing.T) {
	w := wires[0]
	srv := newAPIServer(t, w, fixed(basicRequest), answer{text: validIntent})
	c := newTestClient(t, w, srv, testOptions(&clock{}))
	p, err := ProposeIntent(context.Background(), c, basicRequest, repairParse)
	if err != nil || p.Repaired || p.Reply != validIntent || srv.callCount() != 1 {
		t.Fatalf("proposal %+v, err %v, %d calls; want the first reply as is", p, err, srv.callCount())
	}
}

func TestProposeIntentRepairTransportFailure(t *testing.T) {
	w := wires[1]
	w.check = func(*http.Request, map[string]any, Request) error { return nil }
	srv := newAPIServer(t, w, fixed(Request{}), answer{text: "not json"}, answer{status: 401, body: w.fail("bad key")})
	c := newTestClient(t, w, srv, testOptions(&clock{}))
	p, err := ProposeIntent(context.Background(), c, basicRequest, repairParse)
	if err == nil || !p.Repaired || p.FirstReply != "not json" || p.FirstError == nil {
		t.Fatalf("proposal %+v, err %v; want the transport error with the first reply kept", p, err)
	}
}

func TestKeyNeverInErrorsOrLogs(t *testing.T) {
	for _, w := range wires[1:] { // the two backends with keys
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			echo := "Incorrect API key provided: " + testKey + ". You can find your API key at https://example.com/keys."
			srv := newAPIServer(t, w, fixed(basicRequest),
				answer{status: 429, body: w.fail("rate limited for key " + testKey)},
				answer{status: 500, body: `{"detail":"` + testKey + `"}`},
				answer{status: 401, body: w.fail(echo)})
			var logs bytes.Buffer
			opt := testOptions(&clock{})
			opt.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			c := newTestClient(t, w, srv, opt)
			_, err := c.Complete(context.Background(), basicRequest)
			if err == nil {
				t.Fatal("Complete succeeded; want a 401")
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), testKey) {
				t.Errorf("error leaks the key: %v", err)
			}
			if !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("error %q: want the echoed key replaced by [redacted]", err)
			}
			if logs.Len() == 0 || strings.Contains(logs.String(), testKey) {
				t.Errorf("retry log empty or leaks the key: %s", logs.String())
			}
			if s := fmt.Sprintf("%v %+v %#v", c, c, c); strings.Contains(s, testKey) {
				t.Errorf("printing the client leaks the key: %s", s)
			}
		})
	}
}

func TestConstructorsNameTheVariable(t *testing.T) {
	key := config.NewSecret(testKey)
	cases := []struct {
		name    string
		make    func() (Client, error)
		wantVar string
		wantErr error
	}{
		{"openai no model", func() (Client, error) { return NewOpenAI("", key, "", Options{}) }, "OPENAI_MODEL", ErrNoModel},
		{"openai official no key", func() (Client, error) { return NewOpenAI("", config.Secret{}, "gpt-4o", Options{}) }, "OPENAI_API_KEY", ErrNoKey},
		{"anthropic no model", func() (Client, error) { return NewAnthropic("", key, "", Options{}) }, "ANTHROPIC_MODEL", ErrNoModel},
		{"anthropic no key", func() (Client, error) { return NewAnthropic("", config.Secret{}, "claude", Options{}) }, "ANTHROPIC_API_KEY", ErrNoKey},
		{"ollama no model", func() (Client, error) { return NewOllama("http://localhost:11434", "", Options{}) }, "OLLAMA_MODEL", ErrNoModel},
		{"ollama bad url", func() (Client, error) { return NewOllama("localhost:11434", "m", Options{}) }, "OLLAMA_BASE_URL", nil},
		{"openai url with query", func() (Client, error) { return NewOpenAI("http://h/v1?x=1", key, "m", Options{}) }, "OPENAI_BASE_URL", nil},
		{"guard openai no model", func() (Client, error) {
			return NewGuard(config.Guard{Backend: "openai"}, config.LLM{OpenAIKey: key}, Options{})
		}, "GUARD_LLM_MODEL", ErrNoModel},
		{"guard no backend", func() (Client, error) { return NewGuard(config.Guard{}, config.LLM{}, Options{}) }, "GUARD_LLM_BACKEND", ErrUnknownBackend},
		{"unknown backend", func() (Client, error) { return New(config.LLM{Backend: "gemini"}, Options{}) }, "LLM_BACKEND", ErrUnknownBackend},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.make()
			if err == nil || c != nil {
				t.Fatalf("got client %v, err %v; want an error", c, err)
			}
			if !strings.Contains(err.Error(), tc.wantVar) {
				t.Errorf("error %q does not name %s", err, tc.wantVar)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v is not %v", err, tc.wantErr)
			}
		})
	}
}

func TestOpenAICompatibleWithoutKey(t *testing.T) {
	// A local OpenAI-compatible server needs no key: no Authorization header.
	w := wires[1]
	w.check = func(r *http.Request, _ map[string]any, _ Request) error {
		if r.Header.Get("Authorization") != "" {
			return errors.New("Authorization header sent without a key")
		}
		return nil
	}
	srv := newAPIServer(t, w, fixed(basicRequest), answer{text: "ok"})
	c, err := NewOpenAI(srv.srv.URL+"/v1/", config.Secret{}, "local-model", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Complete(context.Background(), basicRequest); err != nil || r.Text != "ok" {
		t.Fatalf("Complete = %q, %v", r.Text, err)
	}
}

func TestNewFromConfig(t *testing.T) {
	cfg := config.LLM{Backend: "openai", OpenAIBaseURL: "http://127.0.0.1:1/v1", OpenAIModel: "m", OpenAIKey: config.NewSecret(testKey)}
	c, err := New(cfg, Options{})
	if err != nil || c.Backend() != "openai" || c.Model() != "m" {
		t.Fatalf("New = %v, %v", c, err)
	}
	g, err := NewGuard(config.Guard{Backend: "anthropic", Model: "guard-model"}, config.LLM{AnthropicURL: "http://127.0.0.1:1", AnthropicKey: config.NewSecret(testKey)}, Options{})
	if err != nil || g.Backend() != "anthropic" || g.Model() != "guard-model" {
		t.Fatalf("NewGuard = %v, %v", g, err)
	}
	o, err := NewGuard(config.Guard{Backend: "ollama", Model: "llama-guard3"}, config.LLM{OllamaBaseURL: "http://127.0.0.1:11434"}, Options{})
	if err != nil || o.Model() != "llama-guard3" {
		t.Fatalf("NewGuard ollama = %v, %v", o, err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"  7 ", 7 * time.Second, true},
		{"Sat, 01 Mar 2025 12:00:09 GMT", 9 * time.Second, true},
		{"Saturday, 01-Mar-25 12:00:09 GMT", 9 * time.Second, true}, // RFC 850
		{"Sat Mar  1 12:00:09 2025", 9 * time.Second, true},         // asctime
		{"Sat, 01 Mar 2025 11:00:00 GMT", 0, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
		{"99999999999999999999", 0, false},
		{"18446744073709551615", (1 << 31) * time.Second, true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := parseRetryAfter(tc.in, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// These tests run each backend against a real loopback server that is down,
// hangs, or fails every request, and check what a newcomer reads: the final
// error names the backend, its base URL and what to check, and each retry
// warning says which attempt of how many failed and why.

// urlVar is the variable that sets a wire's base URL.
func urlVar(w wire) string { return strings.ToUpper(w.name) + "_BASE_URL" }

// loggedOptions are testOptions with the warnings captured as text lines.
func loggedOptions(logs io.Writer) Options {
	opt := testOptions(&clock{})
	opt.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return opt
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
			// The warnings are written by the calling goroutine: a plain
			// buffer will do.
			var logs bytes.Buffer
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
				want := fmt.Sprintf("llm: %s at %s: attempt %d of 4 failed (connection refused); retrying in ", w.name, base, i+1)
				if !strings.Contains(l, want) {
					t.Errorf("retry warning %q lacks %q", l, want)
				}
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
			var logs bytes.Buffer
			c := newTestClient(t, w, srv, loggedOptions(&logs))
			_, err := c.Complete(context.Background(), basicRequest)
			var se *StatusError
			if !errors.As(err, &se) || se.StatusCode != 500 || srv.callCount() != DefaultMaxAttempts {
				t.Fatalf("err = %v after %d calls; want the 500 after %d", err, srv.callCount(), DefaultMaxAttempts)
			}
			head := "llm: the " + w.name + " backend at " + w.base(srv.srv.URL) + " answered with a server error (4 attempts): HTTP 500 Internal Server Error: "
			tail := "test server: no answer scripted; the server is up but failing: check its logs"
			if !strings.HasPrefix(err.Error(), head) || !strings.HasSuffix(err.Error(), tail) {
				t.Errorf("error %q\nwant %q … %q", err, head, tail)
			}
			lines := retryLines(logs.String())
			if len(lines) != DefaultMaxAttempts-1 {
				t.Fatalf("%d retry warnings, want %d: %s", len(lines), DefaultMaxAttempts-1, logs.String())
			}
			if last := lines[len(lines)-1]; !strings.Contains(last, "attempt 3 of 4 failed (HTTP 500 Internal Server Error: ") {
				t.Errorf("last retry warning %q: want attempt 3 of 4 and the status", last)
			}
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
