package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Defaults of Options.
const (
	DefaultRateLimit       = 10
	DefaultQueueSize       = 1024
	DefaultMaxAttempts     = 5
	DefaultBackoffBase     = 250 * time.Millisecond
	DefaultBackoffMax      = 10 * time.Second
	DefaultTimeout         = 5 * time.Second
	DefaultRefreshInterval = 30 * time.Second
	// maxResponseBody bounds what is read from a receiver's response.
	maxResponseBody = 64 << 10
)

// Header names of docs/design/ledger.md#siem-egress (kept from the product's
// documentation).
const (
	HeaderSignature = "X-EctoLedger-Signature"
	HeaderTimestamp = "X-EctoLedger-Timestamp"
)

// Target is one delivery destination.
type Target struct {
	// URL is the absolute http(s) URL deliveries are POSTed to.
	URL string
	// Format is json, cef or leef ("" is json).
	Format string
	// Kinds filters what the target receives (nil: DefaultKinds).
	Kinds []string
	// BearerToken, when set, overrides Options.BearerToken for this
	// target.
	BearerToken Secret
	// WebhookID names an API-registered webhook ("" for WEBHOOK_URL).
	WebhookID string
}

// Source lists API-registered webhooks; *ledger.Ledger implements it.
type Source interface {
	Webhooks(ctx context.Context) ([]ledger.Webhook, error)
}

// Options configure a Dispatcher. Zero values select the defaults.
type Options struct {
	// Targets are the static targets (WEBHOOK_URL).
	Targets []Target
	// Source, when set, adds its enabled webhooks as targets; they are
	// reloaded every RefreshInterval and on Refresh.
	Source          Source
	RefreshInterval time.Duration
	// BearerToken is WEBHOOK_BEARER_TOKEN; HMACSecret WEBHOOK_HMAC_SECRET.
	BearerToken Secret
	HMACSecret  Secret
	// RateLimit is the deliveries per second per URL (HTTP attempts
	// included).
	RateLimit float64
	// AllowPrivate is WEBHOOK_ALLOW_PRIVATE_TARGETS.
	AllowPrivate bool
	// QueueSize bounds the intake queue and each URL's queue; events
	// beyond it are dropped and counted.
	QueueSize int
	// MaxAttempts, BackoffBase and BackoffMax shape retries: attempt n
	// waits about BackoffBase·2^(n-1) (jittered), at most BackoffMax.
	MaxAttempts int
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Timeout bounds one HTTP attempt.
	Timeout time.Duration
	// Version is the product version in CEF and LEEF headers.
	Version string
	// Resolver resolves target names (nil: the system resolver).
	Resolver *net.Resolver
	// Logger receives delivery failures; nil discards them.
	Logger *slog.Logger
	// Clock is the time source of signature timestamps (nil: time.Now).
	Clock func() time.Time
}

// Stats are the delivery counters since New (docs/design/api.md#metrics
// metrics).
type Stats struct {
	// Queued counts deliveries accepted into a URL queue.
	Queued uint64
	// Delivered counts deliveries a receiver acknowledged with 2xx.
	Delivered uint64
	// Failed counts deliveries given up after their last attempt or a
	// permanent refusal (4xx, redirect, non-public address).
	Failed uint64
	// Dropped counts events or deliveries refused because a queue was
	// full or the dispatcher was closing.
	Dropped uint64
	// Retries counts repeated attempts.
	Retries uint64
	// QueueDepth is the number of events and deliveries waiting now.
	QueueDepth int
}

// Dispatcher delivers SIEM notifications. Notify never blocks; one
// goroutine classifies and fans events out to one worker per URL, each
// with its own bounded queue and rate limit, so a slow receiver delays
// only itself. The caller must call Close.
type Dispatcher struct {
	opts   Options
	log    *slog.Logger
	client *http.Client

	intake chan ledger.Event
	// ctx is cancelled when Close gives up waiting; in-flight requests and
	// backoffs end with it.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed by Close: stop the refresher
	wg     sync.WaitGroup

	// mu guards closed, static, dynamic and workers. Notify holds it for
	// reading while it sends, so Close (which takes it for writing)
	// cannot close intake under a sender.
	mu      sync.RWMutex
	closed  bool
	static  []Target
	dynamic []Target
	workers map[string]*worker

	queued, delivered, failed, dropped, retries atomic.Uint64
}

// worker delivers to one URL.
type worker struct {
	url   string
	queue chan delivery
}

// delivery is one body for one target.
type delivery struct {
	target      Target
	body        []byte
	contentType string
}

// orDefault sets an option left zero or negative to its default.
func orDefault[T int | float64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// New validates the targets and starts the dispatcher.
func New(opts Options) (*Dispatcher, error) {
	orDefault(&opts.RateLimit, DefaultRateLimit)
	orDefault(&opts.QueueSize, DefaultQueueSize)
	orDefault(&opts.MaxAttempts, DefaultMaxAttempts)
	orDefault(&opts.BackoffBase, DefaultBackoffBase)
	orDefault(&opts.BackoffMax, DefaultBackoffMax)
	orDefault(&opts.Timeout, DefaultTimeout)
	orDefault(&opts.RefreshInterval, DefaultRefreshInterval)
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	static := make([]Target, 0, len(opts.Targets))
	for _, t := range opts.Targets {
		t, err := normalize(t, opts.AllowPrivate)
		if err != nil {
			return nil, err
		}
		static = append(static, t)
	}
	d := &Dispatcher{
		opts: opts, log: log, client: newClient(opts.Timeout, opts.AllowPrivate, opts.Resolver),
		intake: make(chan ledger.Event, opts.QueueSize), done: make(chan struct{}),
		static: static, workers: map[string]*worker{},
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	if opts.Source != nil {
		// A failed first load is logged, not fatal: the static targets
		// still work and the refresher retries.
		if err := d.Refresh(d.ctx); err != nil {
			log.Warn("webhook: loading registered webhooks failed; retrying in the background", "err", err)
		}
		d.wg.Add(1)
		go d.refresher()
	}
	d.wg.Add(1)
	go d.dispatch()
	return d, nil
}

// normalize validates a target and fills its defaults.
func normalize(t Target, allowPrivate bool) (Target, error) {
	if _, err := checkURL(t.URL, allowPrivate); err != nil {
		return t, fmt.Errorf("webhook target %s: %w", redactURL(t.URL), err)
	}
	if t.Format == "" {
		t.Format = FormatJSON
	}
	if !ValidFormat(t.Format) {
		return t, fmt.Errorf("webhook target %s: format %q (accepted: json, cef, leef)", redactURL(t.URL), t.Format)
	}
	if t.Kinds == nil {
		t.Kinds = DefaultKinds
	}
	for _, k := range t.Kinds {
		if !ValidKind(k) {
			return t, fmt.Errorf("webhook target %s: kind %q (accepted: %v)", redactURL(t.URL), k, Kinds)
		}
	}
	return t, nil
}

// redactURL keeps scheme and host of a URL for messages: paths and
// queries often carry tokens.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparseable URL)"
	}
	if u.Path == "" && u.RawQuery == "" {
		return u.Scheme + "://" + u.Host
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// Notify queues a committed ledger event for delivery and returns at once:
// when the intake queue is full or the dispatcher is closed, the event is
// dropped and counted. It implements agent.Notifier.
func (d *Dispatcher) Notify(ev ledger.Event) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		d.dropped.Add(1)
		return
	}
	// Non-blocking by construction: the agent loop must never wait for a
	// SIEM.
	select {
	case d.intake <- ev:
	default:
		d.dropped.Add(1)
	}
}

// Refresh reloads the webhooks registered in the Source (after an API
// create, toggle or delete). Disabled webhooks and webhooks whose URL no
// longer passes the target rules are left out (the latter logged).
func (d *Dispatcher) Refresh(ctx context.Context) error {
	if d.opts.Source == nil {
		return nil
	}
	ws, err := d.opts.Source.Webhooks(ctx)
	if err != nil {
		return fmt.Errorf("webhook: load registered webhooks: %w", err)
	}
	var ts []Target
	for _, w := range ws {
		if !w.Enabled {
			continue
		}
		t, err := normalize(Target{URL: w.URL, Format: w.SIEMFormat, Kinds: slices.Clone(w.FilterKinds), BearerToken: Secret(w.BearerToken), WebhookID: w.ID.String()}, d.opts.AllowPrivate)
		if err != nil {
			d.log.Warn("webhook: registered webhook skipped", "webhook", w.ID, "err", err)
			continue
		}
		if len(w.FilterKinds) == 0 {
			t.Kinds = DefaultKinds
		}
		ts = append(ts, t)
	}
	d.mu.Lock()
	d.dynamic = ts
	d.mu.Unlock()
	return nil
}

func (d *Dispatcher) refresher() {
	defer d.wg.Done()
	t := time.NewTicker(d.opts.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-d.done:
			return
		case <-t.C:
			if err := d.Refresh(d.ctx); err != nil {
				d.log.Warn("webhook: refresh failed; keeping the previous list", "err", err)
			}
		}
	}
}

// dispatch classifies intake events and fans them out to URL workers.
func (d *Dispatcher) dispatch() {
	defer d.wg.Done()
	for ev := range d.intake {
		kind := Classify(&ev)
		if kind == "" {
			continue
		}
		d.mu.RLock()
		targets := make([]Target, 0, len(d.static)+len(d.dynamic))
		for _, t := range append(slices.Clip(d.static), d.dynamic...) {
			if !slices.Contains(t.Kinds, kind) {
				continue
			}
			// A full queue only drains (this goroutine alone fills it):
			// drop now rather than redact and render for nothing.
			if w := d.workers[t.URL]; w != nil && len(w.queue) == cap(w.queue) {
				d.dropped.Add(1)
				continue
			}
			targets = append(targets, t)
		}
		d.mu.RUnlock()
		if len(targets) == 0 {
			continue
		}
		msg := NewMessage(kind, &ev, d.opts.Version)
		bodies := map[string]delivery{}
		for _, t := range targets {
			dl, ok := bodies[t.Format]
			if !ok {
				body, ct, err := msg.Render(t.Format)
				if err != nil {
					d.failed.Add(1)
					continue
				}
				dl = delivery{body: body, contentType: ct}
				bodies[t.Format] = dl
			}
			dl.target = t
			d.enqueue(dl)
		}
	}
	// Intake closed: let the workers drain and stop.
	d.mu.Lock()
	for _, w := range d.workers {
		close(w.queue)
	}
	d.mu.Unlock()
}

// enqueue hands a delivery to its URL's worker without blocking.
func (d *Dispatcher) enqueue(dl delivery) {
	d.mu.Lock()
	w := d.workers[dl.target.URL]
	if w == nil {
		w = &worker{url: dl.target.URL, queue: make(chan delivery, d.opts.QueueSize)}
		d.workers[dl.target.URL] = w
		d.wg.Add(1)
		go d.work(w)
	}
	d.mu.Unlock()
	select {
	case w.queue <- dl:
		d.queued.Add(1)
	default:
		// The receiver is slower than the events: drop rather than grow
		// without bound.
		d.dropped.Add(1)
	}
}

// work delivers one URL's queue in order, at most RateLimit HTTP attempts
// per second.
func (d *Dispatcher) work(w *worker) {
	defer d.wg.Done()
	interval := time.Duration(float64(time.Second) / d.opts.RateLimit)
	var next time.Time
	wait := func(until time.Time) bool {
		if dt := time.Until(until); dt > 0 {
			t := time.NewTimer(dt)
			defer t.Stop()
			select {
			case <-t.C:
			case <-d.ctx.Done():
				return false
			}
		}
		return d.ctx.Err() == nil
	}
	for dl := range w.queue {
		ok := false
		for attempt := 1; attempt <= d.opts.MaxAttempts; attempt++ {
			if !wait(next) {
				break
			}
			next = time.Now().Add(interval)
			if attempt > 1 {
				d.retries.Add(1)
			}
			retry, err := d.send(dl)
			if err == nil {
				ok = true
				break
			}
			d.log.Warn("webhook: delivery failed", "url", redactURL(w.url), "webhook", dl.target.WebhookID, "attempt", attempt, "err", err)
			if !retry || attempt == d.opts.MaxAttempts || !wait(time.Now().Add(d.backoff(attempt))) {
				break
			}
		}
		if ok {
			d.delivered.Add(1)
		} else {
			d.failed.Add(1)
		}
	}
}

// backoff is the jittered exponential delay after attempt n.
func (d *Dispatcher) backoff(n int) time.Duration {
	b := d.opts.BackoffBase << min(n-1, 20)
	if b > d.opts.BackoffMax || b <= 0 {
		b = d.opts.BackoffMax
	}
	// Full jitter on the upper half, so many dispatchers do not retry in
	// lockstep.
	return b/2 + rand.N(b/2+1)
}

// errRetryable marks failures worth another attempt.
var errRetryable = errors.New("retryable")

// send makes one attempt. retry reports whether another may succeed.
func (d *Dispatcher) send(dl delivery) (retry bool, err error) {
	req, err := http.NewRequestWithContext(d.ctx, http.MethodPost, dl.target.URL, bytes.NewReader(dl.body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", dl.contentType)
	req.Header.Set("User-Agent", "IronVise-Webhook/"+d.opts.Version)
	token := d.opts.BearerToken
	if dl.target.BearerToken != "" {
		token = dl.target.BearerToken
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+string(token))
	}
	if d.opts.HMACSecret != "" {
		ts := strconv.FormatInt(d.opts.Clock().Unix(), 10)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, "sha256="+Sign([]byte(d.opts.HMACSecret), ts, dl.body))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		// Refused addresses are permanent; timeouts and connection
		// failures are worth retrying.
		return !errors.Is(err, ErrPrivateTarget), err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusRequestTimeout:
		return true, fmt.Errorf("%w: receiver answered %s", errRetryable, resp.Status)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return false, fmt.Errorf("receiver answered %s; redirects are not followed", resp.Status)
	}
	return false, fmt.Errorf("receiver answered %s", resp.Status)
}

// Secret is a string that never prints (tokens and the HMAC secret), so
// Options and Targets can be logged safely: the ledger's type, which the
// key passphrase travels in for the same reason.
type Secret = ledger.Secret

// Sign returns the hex HMAC-SHA256 of "timestamp.body" under secret: the
// value after "sha256=" in X-EctoLedger-Signature. Receivers recompute it
// and compare in constant time, and reject stale timestamps (replay).
func Sign(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Stats returns the counters.
func (d *Dispatcher) Stats() Stats {
	s := Stats{
		Queued: d.queued.Load(), Delivered: d.delivered.Load(), Failed: d.failed.Load(),
		Dropped: d.dropped.Load(), Retries: d.retries.Load(), QueueDepth: len(d.intake),
	}
	d.mu.RLock()
	for _, w := range d.workers {
		s.QueueDepth += len(w.queue)
	}
	d.mu.RUnlock()
	return s
}

// Close stops accepting events and delivers what is queued until ctx
// ends; then in-flight requests are cancelled and the rest is counted as
// failed. It waits for every goroutine.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	close(d.intake)
	close(d.done)
	d.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(finished)
	}()
	var err error
	select {
	case <-finished:
	case <-ctx.Done():
		err = fmt.Errorf("webhook: close: undelivered notifications abandoned: %w", ctx.Err())
		d.cancel()
		<-finished
	}
	d.cancel()
	d.client.CloseIdleConnections()
	return err
}
