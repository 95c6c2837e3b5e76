package ledger

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// API tokens, webhooks and pending approvals live in the ledger database
// so that every instance sharing it sees them
// (docs/design/api.md#authentication,
// docs/design/api.md#tokens-webhooks-policies). They are operational state,
// not evidence: rows change and go, and the corresponding admin_change and
// approval events are what the chains record.

// AdminWriter makes the administrative writes of the operational tables
// (tokens, webhooks). One from Audited appends its admin_change event to
// the instance chain in the same database transaction as each write: both
// commit or neither does, so no crash or failed append leaves a change
// unaudited (docs/ledger.md). The zero AdminWriter of a Ledger's own
// methods appends nothing, for the writes that are not administrative
// changes (start-up tokens, a demo reset's carry-over).
type AdminWriter struct {
	l *Ledger
	// audit is the admin_change payload; nil appends no event.
	audit any
}

// Audited returns the writer whose every write carries the admin_change
// event of payload (any value Append accepts).
func (l *Ledger) Audited(payload any) AdminWriter { return AdminWriter{l: l, audit: payload} }

// update runs write in one transaction, with the admin_change event when
// the writer has one.
func (a AdminWriter) update(ctx context.Context, write func(ctx context.Context, tx WriteTx) error) error {
	if a.audit == nil {
		return a.l.b.Update(ctx, func(tx WriteTx) error { return write(ctx, tx) })
	}
	recs := []Record{{Type: TypeAdminChange, Payload: a.audit}}
	bodies, err := canonicalRecords(recs)
	if err != nil {
		return err
	}
	_, err = a.l.submit(ctx, nil, func(b *batch) (any, error) {
		if err := write(b.ctx, b.tx); err != nil {
			return nil, err
		}
		// The write is in the transaction already: an event that
		// cannot follow it takes it back with the whole transaction.
		evs, err := b.appendRecords(InstanceSessionID, recs, bodies)
		if err != nil {
			return nil, b.abort(err)
		}
		return evs, nil
	})
	if err != nil {
		return fmt.Errorf("ledger: admin change: %w", err)
	}
	return nil
}

// PutToken stores an API token row (only its SHA-256 hex, never the
// token), replacing a row with the same hash.
func (l *Ledger) PutToken(ctx context.Context, t Token) error {
	return AdminWriter{l: l}.PutToken(ctx, t)
}

// PutToken is Ledger.PutToken with the writer's event.
func (a AdminWriter) PutToken(ctx context.Context, t Token) error {
	if len(t.Hash) != 64 || strings.ToLower(t.Hash) != t.Hash {
		return fmt.Errorf("ledger: put token: hash must be 64 lowercase hex digits")
	}
	if _, err := ParseHash(t.Hash); err != nil {
		return fmt.Errorf("ledger: put token: %w", err)
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = a.l.clock().UTC().Truncate(time.Microsecond)
	}
	return a.update(ctx, func(ctx context.Context, tx WriteTx) error { return tx.PutToken(ctx, t) })
}

// Token returns the token row of a hash, or ErrNotFound.
func (l *Ledger) Token(ctx context.Context, hash string) (Token, error) {
	var t Token
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		t, err = tx.Token(ctx, hash)
		return err
	})
	return t, err
}

// Tokens lists token rows, newest first.
func (l *Ledger) Tokens(ctx context.Context) ([]Token, error) {
	var out []Token
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		out, err = tx.Tokens(ctx)
		return err
	})
	return out, err
}

// DeleteToken deletes a token row; ErrNotFound if absent.
func (l *Ledger) DeleteToken(ctx context.Context, hash string) error {
	return AdminWriter{l: l}.DeleteToken(ctx, hash)
}

// DeleteToken is Ledger.DeleteToken with the writer's event.
func (a AdminWriter) DeleteToken(ctx context.Context, hash string) error {
	return a.update(ctx, func(ctx context.Context, tx WriteTx) error { return tx.DeleteToken(ctx, hash) })
}

// DeleteTokensByLabel deletes the tokens with a label (the one-run tokens
// of docs/design/api.md#token-bootstrap) and returns how many went.
func (l *Ledger) DeleteTokensByLabel(ctx context.Context, label string) (int64, error) {
	var n int64
	err := l.b.Update(ctx, func(tx WriteTx) error {
		var err error
		n, err = tx.DeleteTokensByLabel(ctx, label)
		return err
	})
	return n, err
}

// bearerAAD binds an encrypted webhook bearer token to its webhook.
func bearerAAD(id uuid.UUID) []byte { return append([]byte("ironvise/webhook-bearer/v1"), id[:]...) }

// CreateWebhook stores a webhook; its times, and its id unless w has one,
// are assigned here. The bearer token is stored encrypted under the KEK.
func (l *Ledger) CreateWebhook(ctx context.Context, w Webhook) (Webhook, error) {
	return AdminWriter{l: l}.CreateWebhook(ctx, w)
}

// CreateWebhook is Ledger.CreateWebhook with the writer's event. Its
// caller names the webhook in the event, so it assigns the id (NewWebhookID).
func (a AdminWriter) CreateWebhook(ctx context.Context, w Webhook) (Webhook, error) {
	l := a.l
	id := w.ID
	if id == uuid.Nil {
		var err error
		if id, err = l.NewWebhookID(); err != nil {
			return Webhook{}, err
		}
	}
	w.ID = id
	w.CreatedAt = l.clock().UTC().Truncate(time.Microsecond)
	w.UpdatedAt = w.CreatedAt
	w.FilterKinds = slices.Clone(w.FilterKinds)
	var enc []byte
	if w.BearerToken != "" {
		var err error
		if enc, err = l.writeKEK.seal([]byte(w.BearerToken), bearerAAD(id)); err != nil {
			return Webhook{}, err
		}
		enc = append([]byte(l.writeKEK.kind+":"), enc...)
	}
	if err := a.update(ctx, func(ctx context.Context, tx WriteTx) error { return tx.InsertWebhook(ctx, w, enc) }); err != nil {
		return Webhook{}, fmt.Errorf("ledger: create webhook: %w", err)
	}
	return w, nil
}

// NewWebhookID returns a new webhook id.
func (l *Ledger) NewWebhookID() (uuid.UUID, error) {
	id, err := uuid.NewV7FromReader(l.rand)
	if err != nil {
		return uuid.Nil, fmt.Errorf("ledger: webhook id: %w", err)
	}
	return id, nil
}

func (l *Ledger) openBearer(w *Webhook, enc []byte) error {
	if len(enc) == 0 {
		return nil
	}
	kind, ct, ok := strings.Cut(string(enc), ":")
	k := l.keks[kind]
	if !ok || k == nil {
		return fmt.Errorf("ledger: webhook %s: bearer token encrypted with the %q KEK, which this process lacks: %w", w.ID, kind, ErrKeyUnavailable)
	}
	pt, err := k.open([]byte(ct), bearerAAD(w.ID))
	if err != nil {
		return fmt.Errorf("ledger: webhook %s: decrypt bearer token: %w", w.ID, ErrKeyUnavailable)
	}
	w.BearerToken = string(pt)
	return nil
}

// Webhook returns one webhook with its bearer token decrypted.
func (l *Ledger) Webhook(ctx context.Context, id uuid.UUID) (Webhook, error) {
	var w Webhook
	var enc []byte
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		w, enc, err = tx.Webhook(ctx, id)
		return err
	})
	if err != nil {
		return Webhook{}, err
	}
	return w, l.openBearer(&w, enc)
}

// Webhooks lists webhooks newest first, bearer tokens decrypted.
func (l *Ledger) Webhooks(ctx context.Context) ([]Webhook, error) {
	var ws []Webhook
	var encs [][]byte
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		ws, encs, err = tx.Webhooks(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	for i := range ws {
		if err := l.openBearer(&ws[i], encs[i]); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// SetWebhookEnabled sets a webhook's enabled flag and returns it.
func (l *Ledger) SetWebhookEnabled(ctx context.Context, id uuid.UUID, enabled bool) (Webhook, error) {
	return AdminWriter{l: l}.SetWebhookEnabled(ctx, id, enabled)
}

// SetWebhookEnabled is Ledger.SetWebhookEnabled with the writer's event.
func (a AdminWriter) SetWebhookEnabled(ctx context.Context, id uuid.UUID, enabled bool) (Webhook, error) {
	at := a.l.nowMicros()
	if err := a.update(ctx, func(ctx context.Context, tx WriteTx) error { return tx.SetWebhookEnabled(ctx, id, enabled, at) }); err != nil {
		return Webhook{}, err
	}
	return a.l.Webhook(ctx, id)
}

// DeleteWebhook deletes a webhook; ErrNotFound if absent.
func (l *Ledger) DeleteWebhook(ctx context.Context, id uuid.UUID) error {
	return AdminWriter{l: l}.DeleteWebhook(ctx, id)
}

// DeleteWebhook is Ledger.DeleteWebhook with the writer's event.
func (a AdminWriter) DeleteWebhook(ctx context.Context, id uuid.UUID) error {
	return a.update(ctx, func(ctx context.Context, tx WriteTx) error { return tx.DeleteWebhook(ctx, id) })
}

// OpenApproval records a pending approval gate of a session (the
// approval_required event is the producer's to append).
func (l *Ledger) OpenApproval(ctx context.Context, a Approval) error {
	if a.CreatedAt.IsZero() {
		a.CreatedAt = l.clock().UTC().Truncate(time.Microsecond)
	}
	a.DecidedAt = time.Time{}
	return l.b.Update(ctx, func(tx WriteTx) error { return tx.InsertApproval(ctx, a) })
}

// PendingApproval returns the oldest undecided gate of a session, or
// ErrNotFound.
func (l *Ledger) PendingApproval(ctx context.Context, session uuid.UUID) (Approval, error) {
	var a Approval
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		a, err = tx.PendingApproval(ctx, session)
		return err
	})
	return a, err
}

// Approval returns one gate, or ErrNotFound.
func (l *Ledger) Approval(ctx context.Context, gate uuid.UUID) (Approval, error) {
	var a Approval
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		a, err = tx.Approval(ctx, gate)
		return err
	})
	return a, err
}

// DecideApproval records the one decision of a gate: ErrNotFound for an
// unknown gate, ErrAlreadyDecided when it was decided before (by any
// instance), so each gate gets exactly one approval_decision.
func (l *Ledger) DecideApproval(ctx context.Context, gate uuid.UUID, approved bool, reason string) error {
	at := l.nowMicros()
	return l.b.Update(ctx, func(tx WriteTx) error { return tx.DecideApproval(ctx, gate, approved, reason, at) })
}
