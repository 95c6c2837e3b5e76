package cli

import (
	"context"
	"time"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/session"
	"github.com/ironvise/ironvise/internal/webhook"
)

// notifyFlushTimeout bounds how long a command waits at exit for queued
// SIEM deliveries.
const notifyFlushTimeout = 5 * time.Second

// attachEvidence wires SIEM egress of a recording command (audit, demo,
// exec) into rt when WEBHOOK_URL is set or the ledger has registered
// webhooks (the verifiable credential of a completed session is the
// session package's). The returned stop delivers what is queued (bounded)
// and must be called before the ledger closes.
func (a *app) attachEvidence(cfg *config.Config, l *ledger.Ledger, rt *session.Runtime) (stop func(), err error) {
	registered := false
	if ws, err := l.Webhooks(a.ctx); err != nil {
		a.logger().Warn("webhook: cannot read the registered webhooks; only WEBHOOK_URL is notified", "err", err)
	} else {
		for _, w := range ws {
			registered = registered || w.Enabled
		}
	}
	if cfg.Webhook.URL == "" && !registered {
		return func() {}, nil
	}
	opts := webhook.FromConfig(cfg.Webhook)
	if registered {
		opts.Source = l
	}
	opts.Version, opts.Logger = version, a.logger()
	d, err := webhook.New(opts)
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	rt.Notifier = d
	a.hooks.Store(d)
	return func() {
		a.hooks.Store(nil)
		ctx, cancel := context.WithTimeout(context.Background(), notifyFlushTimeout)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			a.logger().Warn("webhook: undelivered notifications at exit", "err", err)
		}
		if st := d.Stats(); st.Failed > 0 || st.Dropped > 0 {
			a.logger().Warn("webhook: some notifications were not delivered", "delivered", st.Delivered, "failed", st.Failed, "dropped", st.Dropped)
		}
	}, nil
}
