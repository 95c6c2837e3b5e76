package server

import (
	"context"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/webhook"
)

// webhookStats are the SIEM egress counters for /metrics.
type webhookStats struct {
	QueueDepth int64
	Delivered  int64
	Failed     int64
	Dropped    int64
}

func (s *Server) webhookStats() webhookStats {
	if s.hooks == nil {
		return webhookStats{}
	}
	st := s.hooks.Stats()
	return webhookStats{QueueDepth: int64(st.QueueDepth), Delivered: int64(st.Delivered), Failed: int64(st.Failed), Dropped: int64(st.Dropped)}
}

// ledgerSource lists the registered webhooks of the current ledger (a demo
// reset replaces it).
type ledgerSource struct{ s *Server }

// Webhooks implements webhook.Source.
func (src ledgerSource) Webhooks(ctx context.Context) ([]ledger.Webhook, error) {
	return src.s.ledger().Webhooks(ctx)
}

// startWebhooks starts SIEM egress for WEBHOOK_URL and every registered
// webhook. The instance that committed an event delivers it
// (docs/design/api.md#webhook-delivery), so the dispatcher is fed this
// process's own commits.
func (s *Server) startWebhooks() error {
	opts := webhook.FromConfig(s.cfg.Webhook)
	opts.Source = ledgerSource{s}
	opts.Version, opts.Logger = s.opts.Version, s.log
	d, err := webhook.New(opts)
	if err != nil {
		return err
	}
	s.hooks = d
	return nil
}

// notifyWebhooks hands the committed events that some webhook kind covers
// to the dispatcher; it never blocks.
func (s *Server) notifyWebhooks(evs []ledger.Event) {
	if s.hooks == nil {
		return
	}
	for i := range evs {
		if webhook.Classify(&evs[i]) != "" {
			s.hooks.Notify(evs[i])
		}
	}
}
