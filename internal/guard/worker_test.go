package guard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/llm"
)

// These tests run the real worker loop (Serve) in-process over pipes and
// talk to it as the host does, byte for byte. The Host tests further down
// do the same across a real process boundary.

// recordingClient wraps the mock and keeps the requests it saw.
type recordingClient struct {
	*llm.Mock
	mu   sync.Mutex
	reqs []llm.Request
}

func (c *recordingClient) Complete(ctx context.Context, r llm.Request) (llm.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r)
	c.mu.Unlock()
	return c.Mock.Complete(ctx, r)
}

func (c *recordingClient) requests() []llm.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]llm.Request(nil), c.reqs...)
}

type workerConn struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
	cli  *recordingClient
}

func startWorker(t *testing.T, script string, now func() time.Time) *workerConn {
	t.Helper()
	entries, err := llm.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	cli := &recordingClient{Mock: llm.NewMock(entries, llm.MockOptions{})}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &workerConn{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1), cli: cli}
	go func() {
		err := Serve(context.Background(), inR, outW, WorkerOptions{Key: testKey, Client: cli, LLMTimeout: 2 * time.Second, Now: now})
		_ = outW.CloseWithError(io.EOF)
		c.done <- err
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		if err := <-c.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return c
}

func requestPayload(nonce uint64, ts time.Time) []byte {
	r := testRequest("audit the notes")
	r.Nonce, r.TsMs = nonce, ts.UnixMilli()
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return b
}

// roundTrip writes one raw line and returns the verified response.
func (c *workerConn) roundTrip(line []byte) Response {
	c.t.Helper()
	if _, err := c.in.Write(line); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	resp, err := readLine(c.out, MaxLineBytes)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	raw, err := open(testKey, ResponseLabel, resp)
	if err != nil {
		c.t.Fatalf("response does not verify: %v", err)
	}
	r, err := decodeResponse(raw)
	if err != nil {
		c.t.Fatalf("response does not decode: %v", err)
	}
	return r
}

func (c *workerConn) send(nonce uint64, ts time.Time) Response {
	return c.roundTrip(seal(testKey, RequestLabel, requestPayload(nonce, ts)))
}

func TestWorkerVerdicts(t *testing.T) {
	c := startWorker(t, `{"role":"guard","content":"ALLOW"}
{"role":"guard","content":"Deny: off goal"}
{"role":"guard","content":"**ALLOW**"}
{"role":"guard","error":"HTTP 503 from the guard model"}`, nil)
	now := time.Now()
	want := []struct {
		verdict, reason, err, raw string
	}{
		{VerdictAllow, "ALLOW", "", "ALLOW"},
		{VerdictDeny, "off goal", "", "Deny: off goal"},
		{VerdictDeny, "**ALLOW**", ErrCodeUnparseable, "**ALLOW**"},
		{VerdictDeny, "guard LLM call failed: llm: mock: scripted failure: HTTP 503 from the guard model", ErrCodeBackend, ""},
	}
	for i, w := range want {
		r := c.send(uint64(i+1), now)
		if r.Nonce != uint64(i+1) || r.Verdict != w.verdict || r.Reason != w.reason || r.Error != w.err || r.Raw != w.raw || r.Model != llm.MockModel {
			t.Errorf("request %d: got %+v, want %+v", i+1, r, w)
		}
	}
	reqs := c.cli.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model calls, want 4", len(reqs))
	}
	for _, r := range reqs {
		if r.Kind != llm.KindGuard || r.Temperature != 0 || r.MaxTokens != MaxOutputTokens || r.JSON || r.System != SystemPrompt || len(r.Messages) != 1 {
			t.Fatalf("model request %+v: want the guard's shape (temperature 0, ≤ 64 tokens, system prompt, one user turn)", r)
		}
	}
}

func TestWorkerNonceAndTimestamp(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	c := startWorker(t, strings.Repeat(`{"role":"guard","content":"ALLOW"}`+"\n", 10), func() time.Time { return now })

	first := seal(testKey, RequestLabel, requestPayload(1, now))
	if r := c.roundTrip(first); r.Verdict != VerdictAllow || r.Error != "" {
		t.Fatalf("first request: %+v", r)
	}
	cases := []struct {
		name  string
		line  []byte
		nonce uint64
		err   string
	}{
		{"replayed line", first, 1, ErrCodeReplayedNonce},
		{"nonce zero", seal(testKey, RequestLabel, requestPayload(0, now)), 0, ErrCodeReplayedNonce},
		{"stale by 30001 ms", seal(testKey, RequestLabel, requestPayload(2, now.Add(-30001*time.Millisecond))), 2, ErrCodeStaleRequest},
		{"future by 30001 ms", seal(testKey, RequestLabel, requestPayload(2, now.Add(30001*time.Millisecond))), 2, ErrCodeStaleRequest},
		{"bad mac", badMAC(seal(testKey, RequestLabel, requestPayload(2, now))), 0, ErrCodeBadMAC},
		{"response label", seal(testKey, ResponseLabel, requestPayload(2, now)), 0, ErrCodeBadMAC},
		{"malformed envelope", []byte("{\"payload\":1}\n"), 0, ErrCodeBadRequest},
		{"authentic but malformed payload", seal(testKey, RequestLabel, []byte(`{"nonce":2}`)), 0, ErrCodeBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.roundTrip(tc.line)
			if r.Verdict != VerdictDeny || r.Error != tc.err || r.Nonce != tc.nonce {
				t.Fatalf("got %+v, want DENY with error %s and nonce %d", r, tc.err, tc.nonce)
			}
		})
	}
	// Rejected requests did not move the nonce: 2 is still accepted, at the
	// exact skew limit; then the sequence may jump ahead but never back.
	if r := c.send(2, now.Add(-MaxClockSkew)); r.Verdict != VerdictAllow {
		t.Fatalf("nonce 2 at the skew limit: %+v", r)
	}
	if r := c.send(10, now.Add(MaxClockSkew)); r.Verdict != VerdictAllow {
		t.Fatalf("nonce 10: %+v", r)
	}
	if r := c.send(9, now); r.Error != ErrCodeReplayedNonce {
		t.Fatalf("nonce 9 after 10: %+v", r)
	}
	if n := len(c.cli.requests()); n != 3 {
		t.Fatalf("the model was called %d times; rejected requests must never reach it", n)
	}
}

func badMAC(line []byte) []byte {
	i := strings.Index(string(line), `"mac":"`) + len(`"mac":"`)
	out := append([]byte(nil), line...)
	out[i] ^= 0x01 // '0'..'9','a'..'f' stay printable; the value changes
	if out[i] == line[i] || !strings.ContainsRune("0123456789abcdef", rune(out[i])) {
		out[i] = 'f'
		if line[i] == 'f' {
			out[i] = 'e'
		}
	}
	return out
}

func TestWorkerOversizeLine(t *testing.T) {
	c := startWorker(t, `{"role":"guard","content":"ALLOW"}`, nil)
	big := make([]byte, MaxLineBytes+2)
	for i := range big {
		big[i] = 'x'
	}
	big[len(big)-1] = '\n'
	if r := c.roundTrip(big); r.Error != ErrCodeBadRequest || r.Verdict != VerdictDeny {
		t.Fatalf("oversize line: %+v", r)
	}
	// The worker stayed in sync and serves the next request.
	if r := c.send(1, time.Now()); r.Verdict != VerdictAllow {
		t.Fatalf("after the oversize line: %+v", r)
	}
}

func TestWorkerLLMTimeout(t *testing.T) {
	entries, _ := llm.ParseScript([]byte(`{"role":"guard","content":"ALLOW","delay_ms":5000}`))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), inR, outW, WorkerOptions{Key: testKey, Client: llm.NewMock(entries, llm.MockOptions{}), LLMTimeout: 50 * time.Millisecond})
	}()
	go func() { _, _ = inW.Write(seal(testKey, RequestLabel, requestPayload(1, time.Now()))) }()
	line, err := readLine(bufio.NewReader(outR), MaxLineBytes)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := open(testKey, ResponseLabel, line)
	r, _ := decodeResponse(raw)
	if r.Error != ErrCodeBackend || !strings.Contains(r.Reason, "deadline exceeded") {
		t.Fatalf("got %+v, want backend_error for the timed-out model call", r)
	}
	_ = inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestServeRejectsBadOptions(t *testing.T) {
	if err := Serve(context.Background(), strings.NewReader(""), io.Discard, WorkerOptions{Key: []byte("short"), Client: llm.NewMock(nil, llm.MockOptions{})}); err == nil {
		t.Error("Serve accepted a short key")
	}
	if err := Serve(context.Background(), strings.NewReader(""), io.Discard, WorkerOptions{Key: testKey}); err == nil {
		t.Error("Serve accepted no client")
	}
	// A truncated last line is an I/O failure, not a request.
	err := Serve(context.Background(), strings.NewReader(`{"payload":`), io.Discard, WorkerOptions{Key: testKey, Client: llm.NewMock(nil, llm.MockOptions{})})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated input: err = %v", err)
	}
}

func TestLLMTimeout(t *testing.T) {
	cases := []struct{ host, want time.Duration }{
		{30 * time.Second, 25 * time.Second},
		{6 * time.Second, time.Second},
		{5 * time.Second, 5 * time.Second},
		{time.Second, time.Second},
	}
	for _, tc := range cases {
		if got := LLMTimeout(tc.host); got != tc.want {
			t.Errorf("LLMTimeout(%v) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

// BenchmarkServeRoundTrip measures the protocol cost inside one process:
// seal, verify, strict decode, prompt, mock reply, seal, verify, decode.
func BenchmarkServeRoundTrip(b *testing.B) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	cli := llm.NewMock(nil, llm.MockOptions{GuardReply: "ALLOW", GuardReplySet: true})
	go func() { done <- Serve(context.Background(), inR, outW, WorkerOptions{Key: testKey, Client: cli}) }()
	out := bufio.NewReader(outR)
	now := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := inW.Write(seal(testKey, RequestLabel, requestPayload(uint64(i+1), now))); err != nil {
			b.Fatal(err)
		}
		line, err := readLine(out, MaxLineBytes)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := open(testKey, ResponseLabel, line)
		if err != nil {
			b.Fatal(err)
		}
		if r, err := decodeResponse(raw); err != nil || r.Verdict != VerdictAllow {
			b.Fatalf("%+v %v", r, err)
		}
	}
	b.StopTimer()
	_ = inW.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
