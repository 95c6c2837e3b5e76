package server

import (
	"context"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Evidence builds the evidence exports the API serves (ledger.md §8): the
// verifiable credential of a completed session, the .elc certificate and the
// JSON report. The composition root adapts internal/evidence to it.
type Evidence interface {
	// Credential issues the VC-JWT of a completed session; it is called
	// before the session is sealed, and the server appends it as a
	// verifiable_credential event.
	Credential(ctx context.Context, l *ledger.Ledger, session uuid.UUID) (string, error)
	// VerifyCredential checks a VC-JWT against the ledger's issuer and
	// returns its claims; the error says why it is not valid.
	VerifyCredential(ctx context.Context, l *ledger.Ledger, jwt string) (map[string]any, error)
	// Certificate returns the session's .elc certificate (JSON).
	Certificate(ctx context.Context, l *ledger.Ledger, session uuid.UUID) ([]byte, error)
	// Report returns the session's JSON report (an object).
	Report(ctx context.Context, l *ledger.Ledger, session uuid.UUID) ([]byte, error)
}

// WebhookStats are the delivery counters of the SIEM egress.
type WebhookStats struct {
	QueueDepth int64
	Delivered  int64
	Failed     int64
	Dropped    int64
}

// Webhooks delivers committed events to the registered SIEM endpoints
// (api.md §8). The instance that committed an event delivers it, so the
// server hands it exactly its own commits.
type Webhooks interface {
	// Committed queues the events of one committed transaction; it must
	// never block (a full queue drops and counts).
	Committed(evs []ledger.Event)
	// Reload is called after the webhooks table changed through the API.
	Reload(ctx context.Context)
	// Stats returns the counters for /metrics.
	Stats() WebhookStats
	// Close stops delivery.
	Close(ctx context.Context)
}

func (s *Server) webhookStats() WebhookStats {
	if s.opts.Webhooks == nil {
		return WebhookStats{}
	}
	return s.opts.Webhooks.Stats()
}
