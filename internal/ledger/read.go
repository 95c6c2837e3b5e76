package ledger

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"
)

// Session returns one session (the instance session included), or
// ErrNotFound.
func (l *Ledger) Session(ctx context.Context, id uuid.UUID) (*Session, error) {
	var s Session
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		s, err = tx.Session(ctx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: session %s: %w", id, err)
	}
	return &s, nil
}

// Sessions lists sessions newest first; the instance session is never
// listed (docs/design/api.md#event-shape).
func (l *Ledger) Sessions(ctx context.Context, f SessionFilter) ([]Session, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if f.Offset < 0 {
		f.Offset = 0
	}
	var out []Session
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		out, err = tx.Sessions(ctx, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: list sessions: %w", err)
	}
	return out, nil
}

// Events returns up to limit events of a session from sequence fromSeq on
// (limit <= 0: all), with their verifying public keys. An unknown session
// yields no events.
func (l *Ledger) Events(ctx context.Context, session uuid.UUID, fromSeq uint64, limit int) ([]Event, error) {
	var out []Event
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		if out, err = tx.Events(ctx, session, fromSeq, limit); err != nil {
			return err
		}
		return l.fillKeys(ctx, tx, out)
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: events of %s: %w", session, err)
	}
	return out, nil
}

// EventsByLog returns up to limit events with log index >= from, in log
// (commit) order, across all chains: the feed behind the event stream.
// Log indexes are gap-free and assigned in commit order, so a reader that
// has seen index n has seen every index below it.
func (l *Ledger) EventsByLog(ctx context.Context, from int64, limit int) ([]Event, error) {
	var out []Event
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		if out, err = tx.EventsByLog(ctx, from, limit); err != nil {
			return err
		}
		return l.fillKeys(ctx, tx, out)
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: events from log index %d: %w", from, err)
	}
	return out, nil
}

// fillKeys sets each event's PublicKey from its chain's key rows.
func (l *Ledger) fillKeys(ctx context.Context, tx ReadTx, evs []Event) error {
	keys := map[uuid.UUID]map[string]ed25519.PublicKey{}
	issuerID := KeyID(l.issuerPub)
	for i := range evs {
		ev := &evs[i]
		if ev.Signer == SignerIssuer || ev.KeyID == issuerID {
			ev.PublicKey = l.issuerPub
			continue
		}
		m, ok := keys[ev.SessionID]
		if !ok {
			rows, err := tx.Keys(ctx, ev.SessionID)
			if err != nil {
				return err
			}
			m = map[string]ed25519.PublicKey{}
			for _, r := range rows {
				m[r.KeyID] = r.PublicKey
			}
			keys[ev.SessionID] = m
		}
		ev.PublicKey = m[ev.KeyID]
	}
	return nil
}

// Stats are the ledger-wide counts behind the API's metrics
// (docs/design/api.md#metrics).
type Stats struct {
	// Sessions counts sessions by status (the instance session excluded).
	Sessions map[Status]int64
	// TotalSessions is the sum of Sessions.
	TotalSessions int64
	// TotalEvents is the number of events in the log, all chains.
	TotalEvents int64
}

// Stats counts sessions and events; the counts come from the ledger, so
// they survive restarts.
func (l *Ledger) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Sessions: map[Status]int64{StatusRunning: 0, StatusCompleted: 0, StatusFailed: 0, StatusAborted: 0}}
	err := l.b.View(ctx, func(tx ReadTx) error {
		counts, err := tx.SessionCounts(ctx)
		if err != nil {
			return err
		}
		for k, v := range counts {
			st.Sessions[k] = v
			st.TotalSessions += v
		}
		st.TotalEvents, err = tx.LogSize(ctx)
		return err
	})
	if err != nil {
		return Stats{}, fmt.Errorf("ledger: stats: %w", err)
	}
	return st, nil
}

// Ping checks that the database answers (readiness probes bound it with
// ctx).
func (l *Ledger) Ping(ctx context.Context) error {
	if err := l.b.View(ctx, func(tx ReadTx) error { _, err := tx.LogSize(ctx); return err }); err != nil {
		return fmt.Errorf("ledger: ping: %w", err)
	}
	return nil
}

// LogSize returns the number of events in the Merkle log.
func (l *Ledger) LogSize(ctx context.Context) (int64, error) {
	var n int64
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		n, err = tx.LogSize(ctx)
		return err
	})
	return n, err
}

// LatestCheckpoint returns the newest checkpoint (there is always one after
// New).
func (l *Ledger) LatestCheckpoint(ctx context.Context) (Checkpoint, error) {
	var cp Checkpoint
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		cp, err = tx.LatestCheckpoint(ctx)
		return err
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ledger: latest checkpoint: %w", err)
	}
	return cp, nil
}

// CheckpointBySize returns the recorded checkpoint of a tree size, or
// ErrNotFound.
func (l *Ledger) CheckpointBySize(ctx context.Context, size int64) (Checkpoint, error) {
	var cp Checkpoint
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		cp, err = tx.CheckpointBySize(ctx, size)
		return err
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ledger: checkpoint %d: %w", size, err)
	}
	return cp, nil
}

// InclusionProof proves that event seq of a session is in a checkpointed
// tree: the recorded checkpoint of treeSize, or the newest one when
// treeSize is 0. An event the checkpoint does not cover yet gives
// ErrNotCovered.
func (l *Ledger) InclusionProof(ctx context.Context, session uuid.UUID, seq uint64, treeSize int64) (InclusionProof, error) {
	var p InclusionProof
	err := l.b.View(ctx, func(tx ReadTx) error {
		evs, err := tx.Events(ctx, session, seq, 1)
		if err != nil {
			return err
		}
		if len(evs) == 0 || evs[0].Seq != seq {
			return fmt.Errorf("event %s/%d: %w", session, seq, ErrNotFound)
		}
		p, err = l.proveLeaf(ctx, tx, evs[0].LogIndex, evs[0].Hash, treeSize)
		return err
	})
	if err != nil {
		return InclusionProof{}, fmt.Errorf("ledger: inclusion proof of %s/%d: %w", session, seq, err)
	}
	return p, nil
}

func (l *Ledger) proveLeaf(ctx context.Context, tx ReadTx, index int64, eventHash Hash, treeSize int64) (InclusionProof, error) {
	var cp Checkpoint
	var err error
	if treeSize == 0 {
		cp, err = tx.LatestCheckpoint(ctx)
	} else {
		cp, err = tx.CheckpointBySize(ctx, treeSize)
	}
	if err != nil {
		return InclusionProof{}, err
	}
	if index >= cp.TreeSize {
		return InclusionProof{}, fmt.Errorf("leaf %d, checkpoint size %d: %w", index, cp.TreeSize, ErrNotCovered)
	}
	r := &txHashReader{ctx: ctx, tx: tx}
	proof, err := tlog.ProveRecord(cp.TreeSize, index, r)
	if err != nil {
		return InclusionProof{}, fmt.Errorf("prove leaf %d in tree %d: %w", index, cp.TreeSize, err)
	}
	return InclusionProof{
		LogIndex: index, EventHash: eventHash, LeafHash: LeafHash(eventHash), TreeSize: cp.TreeSize,
		Root: cp.Root, Path: toHashes(proof), Checkpoint: cp,
	}, nil
}

// ConsistencyProof proves that the log of oldSize leaves is a prefix of the
// log of newSize leaves (0 < oldSize <= newSize <= log size). Clients
// compare the roots with checkpoints they hold.
func (l *Ledger) ConsistencyProof(ctx context.Context, oldSize, newSize int64) (ConsistencyProof, error) {
	p := ConsistencyProof{OldSize: oldSize, NewSize: newSize}
	err := l.b.View(ctx, func(tx ReadTx) error {
		size, err := tx.LogSize(ctx)
		if err != nil {
			return err
		}
		if oldSize <= 0 || oldSize > newSize || newSize > size {
			return fmt.Errorf("sizes %d and %d: want 0 < old <= new <= %d", oldSize, newSize, size)
		}
		r := &txHashReader{ctx: ctx, tx: tx}
		old, err := tlog.TreeHash(oldSize, r)
		if err != nil {
			return err
		}
		nw, err := tlog.TreeHash(newSize, r)
		if err != nil {
			return err
		}
		proof, err := tlog.ProveTree(newSize, oldSize, r)
		if err != nil {
			return err
		}
		p.OldRoot, p.NewRoot, p.Path = Hash(old), Hash(nw), toHashes(proof)
		return nil
	})
	if err != nil {
		return ConsistencyProof{}, fmt.Errorf("ledger: consistency proof %d..%d: %w", oldSize, newSize, err)
	}
	return p, nil
}

// isNotFound reports whether err is ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
