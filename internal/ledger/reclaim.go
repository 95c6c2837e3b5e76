package ledger

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// Orphans (docs/design/ledger.md#session-lifecycle). A session belongs to the
// process whose owner id holds its lease. When that process dies, its
// sessions are orphans:
//
//   - another process fails them once their lease lapses (Recover; a
//     server runs it in the background, not only at startup);
//   - the same owner, restarted, knows at once that the sessions it holds
//     are its dead predecessor's (an owner id is held by one live process
//     at a time, see Options.OwnerID): Owned lists them, so it can take
//     back those it can continue and fail the others (RecoverOwned)
//     without waiting for the lease to lapse.

// Owned returns the running, unsealed sessions whose lease this process's
// owner id holds.
func (l *Ledger) Owned(ctx context.Context) ([]uuid.UUID, error) {
	running, err := l.runningSessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: owned sessions: %w", err)
	}
	var ids []uuid.UUID
	for _, h := range running {
		if h.OwnerID == l.owner && !h.Sealed {
			ids = append(ids, h.ID)
		}
	}
	return ids, nil
}

// RenewLeases extends the leases of this owner id's running sessions by
// the lease duration now, as the background renewal does every
// LeaseRenewInterval. A restarted owner calls it at once, so that the
// sessions its predecessor left carry this process's lease, not the
// dead one's (which another instance would wait out).
func (l *Ledger) RenewLeases(ctx context.Context) error {
	return l.renewLeasesBefore(ctx, 0)
}

// RenewLeasesIfDue is RenewLeases for the leases that end within half the
// lease duration; the others are left as they are. A process that lives
// for one hook event, one per tool call of its agent session, renews the
// session's long lease with it: written on every call, that was one more
// durable transaction, and its sync, each time.
func (l *Ledger) RenewLeasesIfDue(ctx context.Context) error {
	return l.renewLeasesBefore(ctx, l.clock().Add(l.lease/2).UnixMicro())
}

func (l *Ledger) renewLeasesBefore(ctx context.Context, dueBefore int64) error {
	until := l.clock().Add(l.lease).UnixMicro()
	if err := l.b.RenewLeases(ctx, l.owner, until, dueBefore); err != nil {
		return fmt.Errorf("ledger: renew leases: %w", err)
	}
	return nil
}

// RecoverOwned fails sessions of this owner id that its previous process
// left running and that cannot be continued (an agent loop's model
// conversation died with it): each gets an issuer-signed recovery event
// saying why, and status failed. It returns the ids it failed.
func (l *Ledger) RecoverOwned(ctx context.Context, ids []uuid.UUID, why string) ([]uuid.UUID, error) {
	return l.recoverHeads(ctx, ids, func(h *SessionHead, _ int64) bool { return h.OwnerID == l.owner },
		func(h *SessionHead) string {
			return fmt.Sprintf("owner %s restarted: %s; the session was marked failed", h.OwnerID, why)
		})
}

// recoverHeads fails the sessions among ids that pick still selects
// under the write lock (the owner may have renewed or ended a session
// since it was listed), each with a recovery event whose message says
// why.
func (l *Ledger) recoverHeads(ctx context.Context, ids []uuid.UUID, pick func(h *SessionHead, now int64) bool, message func(h *SessionHead) string) ([]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	res, err := l.submit(ctx, ids, func(b *batch) (any, error) {
		var done []uuid.UUID
		for _, id := range ids {
			h, err := b.head(id)
			if err != nil {
				return nil, err
			}
			if h.Status != StatusRunning || h.Sealed || !pick(h, b.now) {
				continue
			}
			payload, err := ownPayload(TypeRecovery, recoveryPayload{PreviousOwner: h.OwnerID, LastSeq: h.LastSeq, Message: message(h)})
			if err != nil {
				return nil, err
			}
			if _, err := b.appendEvent(h, TypeRecovery, payload, SignerIssuer); err != nil {
				return nil, b.abort(err)
			}
			st, now := StatusFailed, b.now
			b.ch.SessionUpdates = append(b.ch.SessionUpdates, SessionUpdate{ID: id, Status: &st, FinishedMicro: &now})
			h.Status = st
			done = append(done, id)
		}
		return done, nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: recover: %w", err)
	}
	done := res.([]uuid.UUID)
	for _, id := range done {
		l.log.Warn("ledger: recovered a session whose owner died", "session", id)
	}
	return done, nil
}
