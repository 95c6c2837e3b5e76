package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/redact"
)

// RetryPolicy bounds the retries of one call. Zero fields take the defaults.
type RetryPolicy struct {
	// MaxAttempts counts the first try; default 4.
	MaxAttempts int
	// BaseDelay is the first backoff; it doubles per retry. Default 500 ms.
	BaseDelay time.Duration
	// MaxDelay caps one backoff; default 8 s.
	MaxDelay time.Duration
	// MaxRetryAfter caps a server's Retry-After; default 30 s.
	MaxRetryAfter time.Duration
}

// Defaults of RetryPolicy and Options.
const (
	DefaultMaxAttempts   = 4
	DefaultBaseDelay     = 500 * time.Millisecond
	DefaultMaxDelay      = 8 * time.Second
	DefaultMaxRetryAfter = 30 * time.Second
	// DefaultTimeout bounds a call when Options.Timeout is zero.
	DefaultTimeout = 2 * time.Minute
	// maxResponseBytes bounds what is read of a response body, so a broken
	// or hostile endpoint cannot exhaust memory.
	maxResponseBytes = 8 << 20
	// maxErrorText bounds the part of an error body quoted in an error.
	maxErrorText = 300
)

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return p
}

// Options configure a client. The zero value is usable.
type Options struct {
	// HTTPClient defaults to a client with no overall timeout (the context
	// bounds each call).
	HTTPClient *http.Client
	// Logger receives retry warnings; nil discards them.
	Logger *slog.Logger
	// Timeout bounds each call, retries included (a caller's earlier
	// deadline still wins); default DefaultTimeout.
	Timeout time.Duration
	// TimeoutVar names the variable that sets Timeout (LLM_TIMEOUT_SECS),
	// for the error of a call that runs out of it; "" names none.
	TimeoutVar string
	// DeadlineVar names the variable behind the caller's deadlines, when
	// one does (the guard worker's budget comes from GUARD_TIMEOUT_SECS).
	DeadlineVar string
	Retry       RetryPolicy
	// BuiltinScript is the mock script replayed when MOCK_LLM_SCRIPT is not
	// set (the demo scenario). Nil means an empty script.
	BuiltinScript []byte
	// Sleep waits between retries and Now reads the clock for HTTP-date
	// Retry-After values; nil means the real clock. Tests inject both.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
}

// StatusError is a non-2xx answer from a model API.
type StatusError struct {
	Backend    string
	StatusCode int
	// Message is the API's error message (or the start of the body), with
	// the API key redacted.
	Message string
	// Hint names what to fix, e.g. the variable holding the key.
	Hint string
}

// Error implements error.
func (e *StatusError) Error() string {
	s := "llm: " + e.Backend + ": " + e.status()
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// status is the answer without backend and hint: "HTTP 500 Internal
// Server Error: overloaded".
func (e *StatusError) status() string {
	s := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Retryable reports whether the status is worth retrying: 429 and 5xx.
func (e *StatusError) Retryable() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// endpoint describes one backend for the shared transport: its name, how to
// read its error bodies and which variables an error should point at.
type endpoint struct {
	backend  string
	keyVar   string // variable holding the key, for 401/403 hints
	modelVar string // variable holding the model, for 404 hints
	urlVar   string // variable holding the base URL
	// errMessage extracts the message from an error body; "" falls back to
	// the raw body.
	errMessage func(body []byte) string
}

// transport is the HTTP machinery shared by the backends.
type transport struct {
	ep         endpoint
	base       string // the configured base URL, printable (no password)
	client     *http.Client
	log        *slog.Logger
	retry      RetryPolicy
	timeout    time.Duration
	timeoutVar string
	// deadlineVar names the variable behind the caller's deadline.
	deadlineVar string
	key         *config.Secret // a pointer: printing t never shows the key
	sleep       func(ctx context.Context, d time.Duration) error
	now         func() time.Time
}

func newTransport(ep endpoint, base string, key *config.Secret, opt Options) *transport {
	t := &transport{ep: ep, base: redactURL(base), client: opt.HTTPClient, log: opt.Logger, retry: opt.Retry.withDefaults(),
		timeout: opt.Timeout, timeoutVar: opt.TimeoutVar, deadlineVar: opt.DeadlineVar, key: key, sleep: opt.Sleep, now: opt.Now}
	if t.client == nil {
		t.client = &http.Client{}
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.timeout <= 0 {
		t.timeout = DefaultTimeout
	}
	if t.sleep == nil {
		t.sleep = sleepCtx
	}
	if t.now == nil {
		t.now = time.Now
	}
	return t
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// postJSON sends body to rawURL and decodes a 2xx answer into out,
// retrying per the policy. header carries the backend's auth headers.
func (t *transport) postJSON(ctx context.Context, rawURL string, header http.Header, body, out any) error {
	err := t.post(ctx, rawURL, header, body, out)
	if err == nil {
		return nil
	}
	// Belt and braces: whatever an inner layer put into the text, the key
	// does not leave this function.
	return &redactedError{err: err, key: t.key}
}

func (t *transport) post(parent context.Context, rawURL string, header http.Header, body, out any) error {
	// The call's own limit applies even under a caller's deadline; the
	// earlier of the two wins.
	ctx, cancel := context.WithTimeout(parent, t.timeout)
	defer cancel()
	payload, err := json.Marshal(body)
	if err != nil {
		return bug(fmt.Errorf("llm: %s: encode request: %w", t.ep.backend, err))
	}
	shown := redactURL(rawURL)
	for attempt := 1; ; attempt++ {
		r, err := t.attempt(ctx, rawURL, shown, header, payload, out)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return t.interrupted(parent, err)
		}
		if !r.retry {
			return t.failed(attempt, err, "")
		}
		delay := t.backoff(attempt - 1)
		if r.afterSet {
			// The server knows when it will have capacity again; capped so a
			// hostile or broken value cannot park the session.
			delay = min(r.after, t.retry.MaxRetryAfter)
		}
		if attempt >= t.retry.MaxAttempts {
			return t.failed(attempt, err, "")
		}
		if dl, ok := ctx.Deadline(); ok && t.now().Add(delay).After(dl) {
			// Waiting would only end in the deadline: fail now with the
			// answer that caused the retry.
			return t.failed(attempt, err, fmt.Sprintf("a retry in %s would pass the time limit", roundDelay(delay)))
		}
		t.log.Warn(fmt.Sprintf("llm: %s at %s: attempt %d of %d failed (%s); retrying in %s",
			t.ep.backend, t.base, attempt, t.retry.MaxAttempts, redactString(reason(err), t.key), roundDelay(delay)),
			"backend", t.ep.backend, "attempt", attempt)
		if serr := t.sleep(ctx, delay); serr != nil {
			return t.interrupted(parent, fmt.Errorf("waiting to retry: %w (last failure: %w)", serr, err))
		}
	}
}

// roundDelay prints a backoff readably: 350ms, 1.2s, 8s.
func roundDelay(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// retryInfo says whether a failed attempt is worth retrying and whether the
// server named a delay.
type retryInfo struct {
	retry    bool
	after    time.Duration
	afterSet bool
}

var noRetry = retryInfo{}

// attempt runs one HTTP exchange.
func (t *transport) attempt(ctx context.Context, rawURL, shown string, header http.Header, payload []byte, out any) (retryInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(payload))
	if err != nil {
		return noRetry, fmt.Errorf("build request for %s: %w", shown, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return noRetry, ctx.Err() // the caller names the limit
		}
		// A refused or reset connection is often a restarting server.
		return retryInfo{retry: true}, netCause(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return noRetry, ctx.Err()
		}
		return retryInfo{retry: true}, fmt.Errorf("reading the response: %w", err)
	}
	if len(data) > maxResponseBytes {
		return noRetry, fmt.Errorf("the response exceeds %d bytes: %w", maxResponseBytes, ErrBadResponse)
	}
	if resp.StatusCode/100 != 2 {
		se := &StatusError{Backend: t.ep.backend, StatusCode: resp.StatusCode, Message: t.errorText(data), Hint: t.hint(resp.StatusCode)}
		if !se.Retryable() {
			return noRetry, se
		}
		d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), t.now())
		return retryInfo{retry: true, after: d, afterSet: ok}, se
	}
	if err := json.Unmarshal(data, out); err != nil {
		return noRetry, fmt.Errorf("decoding the response: %w: %w", ErrBadResponse, err)
	}
	return noRetry, nil
}

// backoff returns the delay before retry n (0-based), exponential with
// "equal jitter": half fixed, half random, so that clients released by the
// same outage do not retry in lockstep.
func (t *transport) backoff(n int) time.Duration {
	d := t.retry.BaseDelay
	for i := 0; i < n && d < t.retry.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, t.retry.MaxDelay)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func (t *transport) hint(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		if t.ep.keyVar != "" {
			return "check " + t.ep.keyVar
		}
		return "the server refused the request; check its access settings"
	case http.StatusNotFound:
		return "check " + t.ep.modelVar + " and " + t.ep.urlVar
	}
	return ""
}

// errorText extracts a short, printable, key-free message from an error
// body.
func (t *transport) errorText(body []byte) string {
	msg := ""
	if t.ep.errMessage != nil {
		msg = t.ep.errMessage(body)
	}
	if msg == "" {
		msg = string(body)
	}
	msg = redactString(msg, t.key)
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, msg)
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && msg[cut]&0xC0 == 0x80 {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date
// (RFC 9110 §10.2.3). A date in the past means now.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		const maxSecs = 1 << 31 // far above any cap; avoids overflow
		return time.Duration(min(n, maxSecs)) * time.Second, true
	}
	if when, err := http.ParseTime(v); err == nil {
		return max(when.Sub(now), 0), true
	}
	return 0, false
}

// redactURL prints a URL without a password in its user info.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// netCause reduces a failed connection to what went wrong: "connection
// refused", or the DNS error, else the error without its URL wrapper. The
// messages built from it name the base URL already, and must stay short
// enough for a one-line step log to show the hint after them.
func netCause(err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr
	}
	var sysErr *os.SyscallError
	if errors.As(err, &sysErr) {
		return sysErr.Err
	}
	return stripURL(err)
}

// stripURL drops the *url.Error wrapper, whose text repeats the URL
// (already printed, redacted, by the caller).
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactString removes the API key from s: everywhere when it is long, as
// a whole token when it is short, so that a one-letter test key does not
// blank out every "k" of an error (redact.Values).
func redactString(s string, key *config.Secret) string {
	if key == nil {
		return s
	}
	return redact.Values(s, key.Reveal())
}

// redactedError prints its wrapped error with the API key removed.
type redactedError struct {
	err error
	key *config.Secret // a pointer, so %#v of the error prints an address
}

func (e *redactedError) Error() string { return redactString(e.err.Error(), e.key) }
func (e *redactedError) Unwrap() error { return e.err }

// bug marks a failure that cannot happen (encoding a request struct), so it
// can be searched for.
func bug(err error) error { return fmt.Errorf("llm: internal error (please report): %w", err) }

// parseBaseURL validates a configured base URL and returns it without a
// trailing slash.
func parseBaseURL(variable, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("llm: %s=%q: not an http(s) URL with a host (example: http://localhost:11434)", variable, redactURL(raw))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("llm: %s=%q: a base URL takes no query or fragment", variable, redactURL(raw))
	}
	return strings.TrimRight(raw, "/"), nil
}
