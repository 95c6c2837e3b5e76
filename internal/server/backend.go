package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// observedBackend wraps the ledger's storage to see every committed write
// of this process: it times each write transaction, hands the committed
// events to the metrics, and wakes the event feed at once, so local commits
// reach streams without waiting for the feed's poll.
type observedBackend struct {
	ledger.Backend
	committed func(evs []ledger.Event, d time.Duration)
}

// Update implements ledger.Backend.
func (b *observedBackend) Update(ctx context.Context, fn func(ledger.WriteTx) error) error {
	tx := &observedTx{}
	start := time.Now()
	err := b.Backend.Update(ctx, func(w ledger.WriteTx) error {
		tx.WriteTx = w
		tx.events = tx.events[:0]
		return fn(tx)
	})
	if err == nil && len(tx.events) > 0 {
		b.committed(tx.events, time.Since(start))
	}
	return err
}

// observedTx records the events a write transaction applies.
type observedTx struct {
	ledger.WriteTx
	events []ledger.Event
}

// Apply implements ledger.WriteTx.
func (t *observedTx) Apply(ctx context.Context, c *ledger.Changes) error {
	if err := t.WriteTx.Apply(ctx, c); err != nil {
		return err
	}
	t.events = append(t.events, c.Events...)
	return nil
}

// CommitNotifications implements ledger.CommitNotifier when the wrapped
// backend does.
func (b *observedBackend) CommitNotifications(ctx context.Context) (<-chan struct{}, error) {
	n, ok := b.Backend.(ledger.CommitNotifier)
	if !ok {
		return nil, fmt.Errorf("server: the %s backend sends no commit notifications: %w", b.Backend.Kind(), errors.ErrUnsupported)
	}
	return n.CommitNotifications(ctx)
}
