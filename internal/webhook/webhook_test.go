package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
	"github.com/ironvise/ironvise/internal/webhook"
)

var update = flag.Bool("update", false, "rewrite the golden notifications")

// hostile is text with every character CEF and LEEF must escape.
const hostile = "rule a|b matched: key=value \\ path\nsecond line\tcolumn; password=hunter2 from 10.1.2.3"

// events writes a real session with one event of each kind and returns
// them in ledger order: guard deny, tripwire deny, policy deny, sandbox
// abort, observation, aborted seal.
func events(t testing.TB) (*ledger.Ledger, []ledger.Event) {
	t.Helper()
	ctx := context.Background()
	l, err := ledgerdb.Open(ctx, "sqlite::memory:", 1, ledger.Options{DataDir: t.TempDir(), CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "audit", SandboxTier: "native-linux"})
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Event
	add := func(typ string, p map[string]any) {
		ev, err := l.Append(ctx, s.ID, typ, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	verdict := func(check, code string) map[string]any {
		return map[string]any{"step": 1, "check": check, "phase": "pre", "decision": "deny", "code": code, "message": hostile, "rule": "r|1=x", "duration_us": 5, "intent_id": "00000000-0000-4000-8000-000000000001"}
	}
	add(ledger.TypeCheckVerdict, verdict("guard", "guard_deny"))
	add(ledger.TypeCheckVerdict, verdict("tripwire", "cmd_banned_program"))
	add(ledger.TypeCheckVerdict, verdict("policy", "policy_command_rule"))
	add(ledger.TypeSandboxResult, map[string]any{"intent_id": "x", "tier": "native-linux", "status": "aborted", "exit_code": nil, "reason": "landlock unavailable\nenable it", "enforced": map[string]any{}})
	add(ledger.TypeObservation, map[string]any{"step": 1, "action_seq": 2, "content": "api_key=sk-live-123 at /home/user/projects/service/config/production/secrets.yaml", "labels": []string{}})
	l.EndSession(ctx, s.ID, ledger.StatusAborted)
	seal, err := l.Seal(ctx, s.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	return l, append(out, seal.Event)
}

func TestClassify(t *testing.T) {
	_, evs := events(t)
	want := []string{webhook.KindGuardDenial, webhook.KindTripwireRejection, webhook.KindPolicyDenial, webhook.KindSandboxAborted, webhook.KindObservation, webhook.KindSessionAborted}
	for i, ev := range evs {
		if got := webhook.Classify(&ev); got != want[i] {
			t.Errorf("%s: got %q want %q", ev.Type, got, want[i])
		}
	}
	for _, p := range []string{`{"type":"check_verdict","check":"guard","decision":"allow"}`, `{"type":"sandbox_result","status":"ok"}`, `{"type":"session_sealed","status":"completed"}`, `not json`} {
		ev := ledger.Event{Type: strings.SplitN(strings.TrimPrefix(p, `{"type":"`), `"`, 2)[0], Payload: []byte(p)}
		if got := webhook.Classify(&ev); got != "" {
			t.Errorf("%s classified %q", p, got)
		}
	}
}

// goldenEvents are fixed events, one of each kind, so the golden files
// do not depend on fresh ids and keys.
func goldenEvents() []ledger.Event {
	sid := uuid.MustParse("0190f1c2-7a3b-7cde-8f01-23456789abcd")
	verdict := func(check, code string) string {
		b, _ := json.Marshal(map[string]any{"type": "check_verdict", "step": 1, "check": check, "phase": "pre", "decision": "deny", "code": code, "message": hostile, "rule": "r|1=x", "duration_us": 5, "intent_id": "00000000-0000-4000-8000-000000000001"})
		return string(b)
	}
	payloads := []struct{ typ, payload string }{
		{ledger.TypeCheckVerdict, verdict("guard", "guard_deny")},
		{ledger.TypeCheckVerdict, verdict("tripwire", "cmd_banned_program")},
		{ledger.TypeCheckVerdict, verdict("approval", "approval_timeout")},
		{ledger.TypeSandboxResult, `{"type":"sandbox_result","intent_id":"x","tier":"native-linux","status":"aborted","exit_code":null,"reason":"landlock unavailable\nenable it","enforced":{}}`},
		{ledger.TypeObservation, `{"type":"observation","step":1,"action_seq":2,"content":"api_key=sk-live-123 at /home/user/projects/service/config/production/secrets.yaml","labels":[]}`},
		{ledger.TypeSessionSealed, `{"type":"session_sealed","status":"aborted","event_count":7,"tip_sequence":6,"tip_hash":"` + strings.Repeat("ab", 32) + `","checkpoint_tree_size":10,"actor":"agent"}`},
	}
	out := make([]ledger.Event, len(payloads))
	for i, p := range payloads {
		out[i] = ledger.Event{LogIndex: int64(40 + i), SessionID: sid, Seq: uint64(10 + i), Type: p.typ, Payload: []byte(p.payload),
			CreatedMicros: 1_780_000_000_123_456, Hash: ledger.Hash{byte(i + 1), 2, 3}}
	}
	return out
}

func TestFormatsGolden(t *testing.T) {
	evs := goldenEvents()
	for _, f := range []string{webhook.FormatJSON, webhook.FormatCEF, webhook.FormatLEEF} {
		t.Run(f, func(t *testing.T) {
			var out bytes.Buffer
			for _, ev := range evs {
				m := webhook.NewMessage(webhook.Classify(&ev), &ev, "1.2.3|beta")
				body, _, err := m.Render(f)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.ContainsAny(body, "\n\r") {
					t.Fatalf("%s body spans lines: %q", f, body)
				}
				out.Write(body)
				out.WriteByte('\n')
			}
			path := filepath.Join("testdata", "notifications."+f)
			if *update {
				os.MkdirAll("testdata", 0o755)
				os.WriteFile(path, out.Bytes(), 0o644)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("%s differs from %s:\n%s", f, path, out.String())
			}
		})
	}
}

func TestCEFAndLEEFEscaping(t *testing.T) {
	ev := goldenEvents()[0]
	m := webhook.NewMessage(webhook.KindGuardDenial, &ev, `v\1|2`)
	cef, _, _ := m.Render(webhook.FormatCEF)
	leef, _, _ := m.Render(webhook.FormatLEEF)
	for _, c := range []struct {
		name, got, want string
	}{
		{"CEF header escapes | and \\", string(cef), `CEF:0|IronVise|IronVise|v\\1\|2|guard_denial|`},
		{"CEF value escapes =, \\ and newline; keeps | and tab", string(cef), `msg=rule a|b matched: key\=value \\ path\nsecond line` + "\t" + `column; password\=[REDACTED] from [REDACTED_IP]`},
		{"CEF rule value", string(cef), `cs5Label=rule cs5=r|1\=x`},
		{"LEEF header", string(leef), `LEEF:2.0|IronVise|IronVise|v\\1\|2|guard_denial|x09|`},
		{"LEEF value escapes =, \\, tab and newline", string(leef), `msg=rule a|b matched: key\=value \\ path\nsecond line\tcolumn; password\=[REDACTED] from [REDACTED_IP]`},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s:\n got %s\nwant substring %s", c.name, c.got, c.want)
		}
	}
	// LEEF attributes are split on the tab delimiter: no value may hold one.
	attrs := strings.Split(strings.SplitN(string(leef), "|x09|", 2)[1], "\t")
	for _, a := range attrs {
		if k, _, ok := strings.Cut(a, "="); !ok || strings.ContainsAny(k, " \\") {
			t.Errorf("LEEF attribute %q does not parse as key=value", a)
		}
	}
}

// receiver is a loopback HTTP endpoint that records deliveries.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	got    []request
	handle func(n int, w http.ResponseWriter) // n: 1-based request count
}

type request struct {
	at     time.Time
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, handle func(n int, w http.ResponseWriter)) *receiver {
	r := &receiver{t: t, handle: handle}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, request{at: time.Now(), header: req.Header.Clone(), body: body})
		n := len(r.got)
		r.mu.Unlock()
		if r.handle != nil {
			r.handle(n, w)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.got...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func closeD(t *testing.T, d *webhook.Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDeliveryAllFormatsSignedAndAuthorised(t *testing.T) {
	_, evs := events(t)
	recv := map[string]*receiver{}
	var targets []webhook.Target
	for _, f := range []string{webhook.FormatJSON, webhook.FormatCEF, webhook.FormatLEEF} {
		recv[f] = newReceiver(t, nil)
		targets = append(targets, webhook.Target{URL: recv[f].srv.URL + "/hook?f=" + f, Format: f})
	}
	before := goleak.IgnoreCurrent()
	targets[2].BearerToken = "leef-own-token"
	secret := "hmac-secret"
	d, err := webhook.New(webhook.Options{Targets: targets, AllowPrivate: true, BearerToken: "env-token", HMACSecret: webhook.Secret(secret), RateLimit: 1000, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		d.Notify(ev)
	}
	// The default kinds: guard, tripwire, sandbox abort, session abort.
	for f, r := range recv {
		waitFor(t, f+" deliveries", func() bool { return len(r.requests()) == 4 })
	}
	closeD(t, d)
	// Every goroutine the dispatcher started has ended.
	goleak.VerifyNone(t, before, goleak.IgnoreAnyFunction("net/http.(*conn).serve"))
	for f, r := range recv {
		for _, req := range r.requests() {
			ts := req.header.Get(webhook.HeaderTimestamp)
			sig, ok := strings.CutPrefix(req.header.Get(webhook.HeaderSignature), "sha256=")
			// The receiver's side of the contract: recompute over
			// "timestamp.body" and compare in constant time.
			want := webhook.Sign([]byte(secret), ts, req.body)
			raw, _ := hex.DecodeString(sig)
			wantRaw, _ := hex.DecodeString(want)
			if !ok || !hmac.Equal(raw, wantRaw) {
				t.Fatalf("%s: signature %q does not verify", f, sig)
			}
			if n, err := strconv.ParseInt(ts, 10, 64); err != nil || time.Since(time.Unix(n, 0)) > time.Minute {
				t.Fatalf("%s: timestamp %q", f, ts)
			}
			// A replayed body under another timestamp does not verify.
			if webhook.Sign([]byte(secret), ts+"1", req.body) == sig {
				t.Fatal("signature does not bind the timestamp")
			}
			auth := req.header.Get("Authorization")
			if (f == webhook.FormatLEEF && auth != "Bearer leef-own-token") || (f != webhook.FormatLEEF && auth != "Bearer env-token") {
				t.Fatalf("%s: Authorization %q", f, auth)
			}
			if bytes.Contains(req.body, []byte("hunter2")) || bytes.Contains(req.body, []byte("10.1.2.3")) {
				t.Fatalf("%s: unredacted content delivered: %s", f, req.body)
			}
		}
		first := r.requests()[0].body
		switch f {
		case webhook.FormatJSON:
			var m map[string]any
			if err := json.Unmarshal(first, &m); err != nil || m["kind"] != "guard_denial" || m["content_hash"] != evs[0].Hash.String() || m["redacted"] != true || m["id"] != float64(evs[0].ID()) {
				t.Fatalf("json body: %s", first)
			}
		case webhook.FormatCEF:
			if !bytes.HasPrefix(first, []byte("CEF:0|IronVise|IronVise|test|guard_denial|")) {
				t.Fatalf("cef body: %s", first)
			}
		case webhook.FormatLEEF:
			if !bytes.HasPrefix(first, []byte("LEEF:2.0|IronVise|IronVise|test|guard_denial|x09|")) {
				t.Fatalf("leef body: %s", first)
			}
		}
	}
	if st := d.Stats(); st.Delivered != 12 || st.Failed != 0 || st.Dropped != 0 || st.Queued != 12 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRateLimitHeld(t *testing.T) {
	_, evs := events(t)
	r := newReceiver(t, nil)
	const rate = 5
	d, err := webhook.New(webhook.Options{Targets: []webhook.Target{{URL: r.srv.URL, Kinds: webhook.Kinds}}, AllowPrivate: true, RateLimit: rate})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for _, ev := range evs {
			d.Notify(ev)
		}
	}
	waitFor(t, "12 deliveries", func() bool { return len(r.requests()) == 12 })
	closeD(t, d)
	reqs := r.requests()
	// Sends start at least 1/rate apart; arrival times add network jitter,
	// and the first request also pays for the connection, so windows are
	// measured from the second request on with 100 ms of slack. A busy
	// machine can only spread requests further apart.
	for i := 1; i+rate < len(reqs); i++ {
		if w := reqs[i+rate].at.Sub(reqs[i].at); w < time.Second-100*time.Millisecond {
			t.Fatalf("%d deliveries within %v (limit %d/s)", rate+1, w, rate)
		}
	}
	if total := reqs[len(reqs)-1].at.Sub(reqs[0].at); total < time.Duration(len(reqs)-1)*time.Second/rate-100*time.Millisecond {
		t.Fatalf("%d deliveries in %v (limit %d/s)", len(reqs), total, rate)
	}
}

func TestRetriesOn5xxNotOn4xx(t *testing.T) {
	_, evs := events(t)
	flaky := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	refusing := newReceiver(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusUnauthorized) })
	d, err := webhook.New(webhook.Options{
		Targets:      []webhook.Target{{URL: flaky.srv.URL, Kinds: []string{webhook.KindGuardDenial}}, {URL: refusing.srv.URL, Kinds: []string{webhook.KindGuardDenial}}},
		AllowPrivate: true, RateLimit: 1000, BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Notify(evs[0])
	waitFor(t, "delivery after retries", func() bool { st := d.Stats(); return st.Delivered == 1 && st.Failed == 1 })
	closeD(t, d)
	if n := len(flaky.requests()); n != 3 {
		t.Fatalf("flaky receiver saw %d attempts; want 3 (two 503s, then 200)", n)
	}
	if n := len(refusing.requests()); n != 1 {
		t.Fatalf("a 401 was retried: %d attempts", n)
	}
	if st := d.Stats(); st.Retries != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRetryGivesUp(t *testing.T) {
	_, evs := events(t)
	down := newReceiver(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) })
	d, _ := webhook.New(webhook.Options{Targets: []webhook.Target{{URL: down.srv.URL}}, AllowPrivate: true, RateLimit: 1000, MaxAttempts: 3, BackoffBase: time.Millisecond})
	d.Notify(evs[0])
	waitFor(t, "give-up", func() bool { return d.Stats().Failed == 1 })
	closeD(t, d)
	if n := len(down.requests()); n != 3 {
		t.Fatalf("%d attempts; want 3", n)
	}
}

func TestDropsCountedWhenReceiverHangs(t *testing.T) {
	_, evs := events(t)
	release := make(chan struct{})
	hang := newReceiver(t, func(int, http.ResponseWriter) { <-release })
	defer close(release)
	before := goleak.IgnoreCurrent()
	d, err := webhook.New(webhook.Options{Targets: []webhook.Target{{URL: hang.srv.URL}}, AllowPrivate: true, RateLimit: 1000, QueueSize: 4, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	const n = 10_000
	for i := range n {
		d.Notify(evs[i%len(evs)])
	}
	if el := time.Since(start); el > 5*time.Second {
		// Generous: this checks that Notify does not wait on the
		// receiver (which never answers), not how fast it is.
		t.Fatalf("%d notifications took %v with a hanging receiver", n, el)
	}
	waitFor(t, "the worker to be stuck on the receiver", func() bool { return len(hang.requests()) == 1 })
	st := d.Stats()
	if st.Dropped == 0 || st.Queued > 4+1 || st.Delivered != 0 {
		t.Fatalf("stats %+v: want drops counted and at most queue size + 1 queued", st)
	}
	// Close gives up at its deadline, cancelling the hung request.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := d.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v", err)
	}
	goleak.VerifyNone(t, before, goleak.IgnoreAnyFunction("net/http.(*conn).serve"))
	if st := d.Stats(); st.Failed == 0 || st.QueueDepth != 0 {
		t.Fatalf("after close: %+v", st)
	}
	// Closed: further notifications are dropped, not queued.
	dropped := d.Stats().Dropped
	d.Notify(evs[0])
	if d.Stats().Dropped != dropped+1 {
		t.Fatal("notify after close not counted as dropped")
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	_, evs := events(t)
	target := newReceiver(t, nil)
	redirect := newReceiver(t, func(_ int, w http.ResponseWriter) {
		w.Header().Set("Location", target.srv.URL)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	d, _ := webhook.New(webhook.Options{Targets: []webhook.Target{{URL: redirect.srv.URL}}, AllowPrivate: true, RateLimit: 1000})
	d.Notify(evs[0])
	waitFor(t, "failure", func() bool { return d.Stats().Failed == 1 })
	closeD(t, d)
	if len(target.requests()) != 0 || len(redirect.requests()) != 1 {
		t.Fatalf("redirect followed or retried: %d %d", len(target.requests()), len(redirect.requests()))
	}
}

func TestWebhooksFromLedger(t *testing.T) {
	l, evs := events(t)
	r := newReceiver(t, nil)
	ctx := context.Background()
	if _, err := l.CreateWebhook(ctx, ledger.Webhook{Label: "siem", URL: r.srv.URL, SIEMFormat: "cef", FilterKinds: []string{"observation"}, Enabled: true, BearerToken: "registered-token"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateWebhook(ctx, ledger.Webhook{Label: "off", URL: r.srv.URL + "/off", SIEMFormat: "json", Enabled: false}); err != nil {
		t.Fatal(err)
	}
	d, err := webhook.New(webhook.Options{Source: l, AllowPrivate: true, RateLimit: 1000, BearerToken: "env-token"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		d.Notify(ev)
	}
	waitFor(t, "the observation", func() bool { return d.Stats().Delivered == 1 })
	closeD(t, d)
	reqs := r.requests()
	if len(reqs) != 1 || reqs[0].header.Get("Authorization") != "Bearer registered-token" || !bytes.Contains(reqs[0].body, []byte("|observation|")) ||
		!bytes.Contains(reqs[0].body, []byte("[REDACTED_PATH]")) || bytes.Contains(reqs[0].body, []byte("sk-live-123")) {
		t.Fatalf("deliveries: %d %+v", len(reqs), reqs)
	}
}

func TestFromConfig(t *testing.T) {
	c, err := config.Load(config.MapLookup(map[string]string{
		"HOME": "/h", "WEBHOOK_URL": "https://siem.example.com/hook", "WEBHOOK_INCLUDE_GUARD": "false",
		"SIEM_FORMAT": "leef", "WEBHOOK_HMAC_SECRET": "s", "WEBHOOK_BEARER_TOKEN": "b", "WEBHOOK_RATE_LIMIT_PER_SECOND": "3",
	}))
	if err != nil {
		t.Fatal(err)
	}
	o := webhook.FromConfig(c.Webhook)
	if len(o.Targets) != 1 || o.Targets[0].Format != "leef" || o.RateLimit != 3 || o.HMACSecret != "s" || o.BearerToken != "b" || o.AllowPrivate {
		t.Fatalf("options %+v", o)
	}
	if strings.Join(o.Targets[0].Kinds, ",") != "tripwire_rejection,sandbox_aborted,session_aborted,checkpoint" {
		t.Fatalf("kinds %v", o.Targets[0].Kinds)
	}
	if s := strings.Join([]string{o.BearerToken.String(), o.HMACSecret.GoString()}, ""); strings.Contains(s, "b") && !strings.Contains(s, "redacted") {
		t.Fatalf("a secret printed: %s", s)
	}
	if _, err := webhook.New(webhook.Options{Targets: []webhook.Target{{URL: "https://siem.example.com", Format: "syslog"}}}); err == nil {
		t.Fatal("unknown format accepted")
	}
	if _, err := webhook.New(webhook.Options{Targets: []webhook.Target{{URL: "https://siem.example.com", Kinds: []string{"everything"}}}}); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

// TestCheckpointKind is issue 23 item 2: every checkpoint recorded on the
// instance chain goes to the SIEM (a copy outside the operator's
// database), with its size and root in the message and the payload
// unredacted enough to rebuild the tree head.
func TestCheckpointKind(t *testing.T) {
	root := strings.Repeat("ab", 32)
	ev := ledger.Event{SessionID: ledger.InstanceSessionID, Seq: 7, Type: ledger.TypeCheckpoint,
		Payload: []byte(`{"key_id":"0a1b2c3d","root_hash":"` + root + `","signature":"00","timestamp":"2026-01-02T03:04:05.000000Z","tree_size":42,"type":"checkpoint"}`)}
	if k := webhook.Classify(&ev); k != webhook.KindCheckpoint {
		t.Fatalf("Classify = %q; want checkpoint", k)
	}
	if !slices.Contains(webhook.DefaultKinds, webhook.KindCheckpoint) {
		t.Fatal("checkpoints are not among the default kinds: WEBHOOK_URL would not receive them")
	}
	m := webhook.NewMessage(webhook.KindCheckpoint, &ev, "test")
	body, _, err := m.Render(webhook.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), root) || !strings.Contains(string(body), `"tree_size":42`) {
		t.Fatalf("checkpoint notification lacks its size or root: %s", body)
	}
	cef, _, _ := m.Render(webhook.FormatCEF)
	if !strings.Contains(string(cef), "checkpoint 42 root "+root) {
		t.Fatalf("CEF message: %s", cef)
	}
}
