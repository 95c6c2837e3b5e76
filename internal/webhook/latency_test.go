package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/webhook"
)

// deniedStep is one agent step the tripwire denies: it appends
// intent_proposed and three verdicts, the last a denial the notifier sees.
const deniedStep = `{"action":"run_command","params":{"command":"sudo id"},"justification":"check identity"}`

// agentSession is a real agent session on an in-memory ledger with the
// given notifier (nil: none).
func agentSession(b *testing.B, n agent.Notifier) *agent.Session {
	b.Helper()
	ctx := context.Background()
	l, err := ledgerdb.Open(ctx, "sqlite::memory:", 1, ledger.Options{DataDir: b.TempDir(), CheckpointInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close(context.Background()) })
	ws := b.TempDir()
	cfg, err := tripwire.LoadConfigBytes(nil, tripwire.LoadOptions{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	sc, err := scan.New(scan.Medium)
	if err != nil {
		b.Fatal(err)
	}
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "latency", SandboxTier: "none"})
	if err != nil {
		b.Fatal(err)
	}
	// Nothing is executed: the step is denied before the sandbox.
	env := &agent.Env{Ledger: l, Tier: sandbox.NewPermissive(sandbox.Options{}), Scanner: sc, Notifier: n}
	return agent.Open(env, s.ID, "latency", agent.Config{Workspace: ws, Tripwire: tripwire.New(cfg, tripwire.Options{Workspace: ws}), GuardDisabled: "--no-guard"})
}

// BenchmarkAgentStepLatency measures one denied agent step with no
// notifier, with a dispatcher whose receiver answers at once, and with one
// whose receiver never answers. Delivery must not show in the step time.
func BenchmarkAgentStepLatency(b *testing.B) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	fast := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	b.Cleanup(func() { close(release); hang.Close(); fast.Close() })
	for _, c := range []struct {
		name string
		url  string
	}{{"no_notifier", ""}, {"fast_receiver", fast.URL}, {"hanging_receiver", hang.URL}} {
		b.Run(c.name, func(b *testing.B) {
			var n agent.Notifier
			var d *webhook.Dispatcher
			if c.url != "" {
				var err error
				d, err = webhook.New(webhook.Options{Targets: []webhook.Target{{URL: c.url}}, AllowPrivate: true, RateLimit: 1e6, Timeout: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				n = d
			}
			s := agentSession(b, n)
			ctx := context.Background()
			step := 0
			for b.Loop() {
				step++
				res, err := s.Step(ctx, step, deniedStep, agent.SourceLLM)
				if err != nil || res.Check.Allowed() {
					b.Fatalf("step: %v", err)
				}
			}
			b.StopTimer()
			if d != nil {
				st := d.Stats()
				b.ReportMetric(float64(st.Dropped), "dropped")
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				d.Close(ctx)
				cancel()
			}
		})
	}
}

// BenchmarkNotify measures Notify itself while the receiver hangs (the
// queue is full, so every call is a counted drop).
func BenchmarkNotify(b *testing.B) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	b.Cleanup(func() { close(release); hang.Close() })
	_, evs := events(b)
	d, err := webhook.New(webhook.Options{Targets: []webhook.Target{{URL: hang.URL}}, AllowPrivate: true, Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		d.Close(ctx)
	})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d.Notify(evs[i%len(evs)])
		i++
	}
}
