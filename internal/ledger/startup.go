package ledger

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"
)

// startupTail is how many trailing events of each running session the
// startup check verifies.
const startupTail = 32

// StartupReport is the result of VerifyStartup or VerifyFull.
type StartupReport struct {
	// LogSize and CheckpointSize describe the log that was checked.
	LogSize        int64
	CheckpointSize int64
	// SessionsChecked counts the chains looked at.
	SessionsChecked int
	// Problems lists every inconsistency found; empty means the ledger
	// passed.
	Problems []string
	// Failed holds the full reports of chains that failed (VerifyFull).
	Failed []Report
}

// OK reports whether no problem was found.
func (r *StartupReport) OK() bool { return len(r.Problems) == 0 }

// Err returns nil when the ledger passed, else an error wrapping
// ErrTampered that lists the problems.
func (r *StartupReport) Err() error {
	if r.OK() {
		return nil
	}
	err := fmt.Errorf("%w: %d problem(s)", ErrTampered, len(r.Problems))
	for _, p := range r.Problems {
		err = fmt.Errorf("%w\n  - %s", err, p)
	}
	return err
}

// VerifyStartup runs the startup checks of
// docs/design/ledger.md#verification: the newest checkpoint's signature, the
// stored log against it (root, and the leaves appended since it), and the
// tail of every running session (links, hashes, signatures). It is fast
// enough for every start; VerifyFull checks everything.
func (l *Ledger) VerifyStartup(ctx context.Context) (StartupReport, error) {
	return l.verifyStartup(ctx, func(*SessionHead) bool { return true })
}

// VerifyStartupOwned is VerifyStartup for a process that writes only to
// the log, the instance chain and sessions of its own owner id (a
// standalone exec, a hook event): of the running sessions it checks only
// those of its owner id. VerifyStartup's cost grows with the number of
// running sessions, which every such process paid before it recorded
// anything (0.27 ms each for a hook event here: 40 agent sessions left
// running made every tool call 11 ms slower). The other sessions' tails
// are checked by the processes that write to them, by serve's start and
// by verify-session.
func (l *Ledger) VerifyStartupOwned(ctx context.Context) (StartupReport, error) {
	return l.verifyStartup(ctx, func(h *SessionHead) bool { return h.OwnerID == l.owner })
}

func (l *Ledger) verifyStartup(ctx context.Context, mine func(*SessionHead) bool) (StartupReport, error) {
	var rep StartupReport
	err := l.b.View(ctx, func(tx ReadTx) error {
		if err := l.checkLogTail(ctx, tx, &rep); err != nil {
			return err
		}
		running, err := tx.RunningSessions(ctx)
		if err != nil {
			return err
		}
		ids := []uuid.UUID{InstanceSessionID}
		for i := range running {
			if mine(&running[i]) {
				ids = append(ids, running[i].ID)
			}
		}
		for _, id := range ids {
			rep.SessionsChecked++
			if p, err := l.checkTail(ctx, tx, id); err != nil {
				return err
			} else if p != "" {
				rep.Problems = append(rep.Problems, fmt.Sprintf("session %s: %s", id, p))
			}
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("ledger: startup verification: %w", err)
	}
	return rep, nil
}

// checkLogTail checks the newest checkpoint and the log beyond it.
func (l *Ledger) checkLogTail(ctx context.Context, tx ReadTx, rep *StartupReport) error {
	size, err := tx.LogSize(ctx)
	if err != nil {
		return err
	}
	rep.LogSize = size
	cp, err := tx.LatestCheckpoint(ctx)
	if isNotFound(err) {
		rep.Problems = append(rep.Problems, "the ledger has no checkpoint")
		return nil
	}
	if err != nil {
		return err
	}
	rep.CheckpointSize = cp.TreeSize
	if err := VerifyCheckpoint(&cp, l.origin, l.issuerPub); err != nil {
		rep.Problems = append(rep.Problems, err.Error())
	}
	if cp.TreeSize > size {
		rep.Problems = append(rep.Problems, fmt.Sprintf("checkpoint %d covers more leaves than the log holds (%d): the log was truncated", cp.TreeSize, size))
		return nil
	}
	r := &txHashReader{ctx: ctx, tx: tx, memo: map[int64]Hash{}}
	root, err := tlog.TreeHash(cp.TreeSize, r)
	if err != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("log hashes for checkpoint %d are unreadable: %v", cp.TreeSize, err))
		return nil
	}
	if Hash(root) != cp.Root {
		rep.Problems = append(rep.Problems, fmt.Sprintf("the stored log gives root %s at size %d, the signed checkpoint says %s", Hash(root), cp.TreeSize, cp.Root))
	}
	if n, err := tx.CountEventsInLog(ctx, cp.TreeSize, size); err != nil {
		return err
	} else if n != size-cp.TreeSize {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d of the %d leaves after checkpoint %d have no event", size-cp.TreeSize-n, size-cp.TreeSize, cp.TreeSize))
	}
	// Every leaf appended since the checkpoint must be its event's hash.
	evs, err := tx.EventsByLog(ctx, cp.TreeSize, int(size-cp.TreeSize))
	if err != nil {
		return err
	}
	if len(evs) > 0 {
		idx := make([]int64, len(evs))
		for i := range evs {
			idx[i] = tlog.StoredHashIndex(0, evs[i].LogIndex)
		}
		leaves, err := tx.ReadHashes(ctx, idx)
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("leaf hashes after checkpoint %d are unreadable: %v", cp.TreeSize, err))
			return nil
		}
		for i := range evs {
			if leaves[i] != LeafHash(evs[i].Hash) {
				rep.Problems = append(rep.Problems, fmt.Sprintf("log leaf %d does not hold the hash of its event", evs[i].LogIndex))
				break
			}
		}
	}
	if size > cp.TreeSize {
		proof, err := tlog.ProveTree(size, cp.TreeSize, r)
		if err == nil {
			var now tlog.Hash
			if now, err = tlog.TreeHash(size, r); err == nil {
				err = tlog.CheckTree(proof, size, now, cp.TreeSize, tlog.Hash(cp.Root))
			}
		}
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("the log is not consistent with checkpoint %d: %v", cp.TreeSize, err))
		}
	}
	return nil
}

// checkTail verifies the last events of one chain: links, hashes, the keys
// in force, and the signatures of the tip and of every key rotation.
func (l *Ledger) checkTail(ctx context.Context, tx ReadTx, id uuid.UUID) (string, error) {
	s, err := tx.Session(ctx, id)
	if err != nil {
		return "", err
	}
	if s.EventCount == 0 {
		return "the session has no events", nil
	}
	from := uint64(0)
	if s.EventCount > startupTail {
		from = uint64(s.EventCount - startupTail)
	}
	evs, err := tx.Events(ctx, id, from, 0)
	if err != nil {
		return "", err
	}
	keys, err := tx.Keys(ctx, id)
	if err != nil {
		return "", err
	}
	if len(keys) == 0 {
		return "no key rows", nil
	}
	for i := range evs {
		ev := &evs[i]
		if ev.Seq != from+uint64(i) {
			return fmt.Sprintf("sequence %d expected, found %d", from+uint64(i), ev.Seq), nil
		}
		if EventHash(ev.PrevHash, ev.SessionID, ev.Seq, ev.CreatedMicros, ev.Type, ev.Payload) != ev.Hash {
			return fmt.Sprintf("event %d: stored hash does not match its bytes", ev.Seq), nil
		}
		if i > 0 && ev.PrevHash != evs[i-1].Hash {
			return fmt.Sprintf("event %d: prev_hash does not link", ev.Seq), nil
		}
		if ev.Seq == 0 && ev.PrevHash != GenesisPrevHash(id) {
			return "genesis prev_hash is wrong", nil
		}
		pub := l.issuerPub
		if ev.Signer == SignerSession {
			k := keys[0]
			for _, r := range keys {
				if r.ValidFromSeq <= ev.Seq {
					k = r
				}
			}
			pub = k.PublicKey
			if ev.KeyID != k.KeyID {
				return fmt.Sprintf("event %d: signed by key %s, key %s is in force", ev.Seq, ev.KeyID, k.KeyID), nil
			}
		} else if !IssuerSignable(ev.Type) {
			return fmt.Sprintf("event %d: issuer signature on a %s event", ev.Seq, ev.Type), nil
		}
		// Signatures: the tip's and each key rotation's. Every event of
		// the tail is bound to the tip through the hashes and links
		// checked above, and the tip's signature is over its hash, so
		// the tip's signature covers the bytes of the whole tail; a
		// rotation's, by the key before it, is what makes the next key
		// authentic. Checking the other signatures as well would find
		// only a signature damaged on its own, with the event's bytes
		// intact: the full verification (verify-session, serve
		// --verify-full) checks every one. This runs at every start of
		// every process, where checking all 32 was 7.7 % of a
		// standalone exec's CPU samples (docs/operate/performance.md).
		if i != len(evs)-1 && ev.Type != TypeKeyRotation {
			continue
		}
		if !verifySig(pub, ev) {
			return fmt.Sprintf("event %d: signature does not verify", ev.Seq), nil
		}
	}
	return "", nil
}

// VerifyFull verifies every chain with the five checks, rebuilds the whole
// Merkle log from the events and compares every stored hash and every
// checkpoint root with it (`serve --verify-full`).
func (l *Ledger) VerifyFull(ctx context.Context) (StartupReport, error) {
	return l.VerifyFullProgress(ctx, nil)
}

// VerifyProgress is how far VerifyFullProgress has come.
type VerifyProgress struct {
	// Done of Total chains are verified; Events counts their events.
	Done, Total int
	Events      int64
	Elapsed     time.Duration
}

// VerifyFullProgress is VerifyFull calling progress (when not nil) after
// each chain, from one goroutine at a time. Chains are verified by a
// bounded pool of workers and the log is rebuilt alongside them; the
// report lists the problems in the same order as a sequential run: the
// log's, then each failed chain's in listing order.
func (l *Ledger) VerifyFullProgress(ctx context.Context, progress func(VerifyProgress)) (StartupReport, error) {
	start := time.Now()
	ids, err := l.chainIDs(ctx)
	if err != nil {
		return StartupReport{}, fmt.Errorf("ledger: full verification: %w", err)
	}
	// A read error on either side stops the other.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rep StartupReport
	logDone := make(chan error, 1)
	go func() {
		err := l.b.View(ctx, func(tx ReadTx) error { return l.rebuildLog(ctx, tx, &rep) })
		if err != nil {
			cancel()
		}
		logDone <- err
	}()
	failed, err := l.verifyChains(ctx, ids, func(done int, events int64) {
		if progress != nil {
			progress(VerifyProgress{Done: done, Total: len(ids), Events: events, Elapsed: time.Since(start)})
		}
	})
	if err != nil {
		cancel()
	}
	if lerr := <-logDone; lerr != nil {
		return rep, fmt.Errorf("ledger: full verification: %w", lerr)
	}
	if err != nil {
		return rep, err
	}
	rep.SessionsChecked = len(ids)
	for _, r := range failed {
		if r != nil {
			name, c, _ := r.FirstFailure()
			rep.Problems = append(rep.Problems, fmt.Sprintf("session %s: %s check failed at seq %d: %s", r.SessionID, name, c.Seq, c.Problem))
			rep.Failed = append(rep.Failed, *r)
		}
	}
	return rep, nil
}

// chainIDs lists the instance chain and every session, in listing order.
func (l *Ledger) chainIDs(ctx context.Context) ([]uuid.UUID, error) {
	ids := []uuid.UUID{InstanceSessionID}
	err := l.b.View(ctx, func(tx ReadTx) error {
		for off := 0; ; off += 500 {
			ss, err := tx.Sessions(ctx, SessionFilter{Limit: 500, Offset: off})
			if err != nil {
				return err
			}
			for _, s := range ss {
				ids = append(ids, s.ID)
			}
			if len(ss) < 500 {
				return nil
			}
		}
	})
	return ids, err
}

// verifyChains runs VerifySession on every id with a bounded pool of
// workers and returns, in the order of ids, the report of each chain that
// failed (nil for those that passed, so that a ledger of many sessions
// costs a pointer per session).
// On a read error it stops the workers and returns the error of the first
// id that had one.
func (l *Ledger) verifyChains(ctx context.Context, ids []uuid.UUID, done func(done int, events int64)) ([]*Report, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed := make([]*Report, len(ids))
	errs := make([]error, len(ids))
	dense := &denseLog{}
	var (
		next   atomic.Int64
		mu     sync.Mutex
		n      int
		events int64
		wg     sync.WaitGroup
	)
	// Small chains spend most of their time in database reads, so a few
	// more workers than cores keep the cores busy; each large chain's
	// signatures are already spread over all cores by VerifySession.
	for range min(len(ids), verifyFullWorkers()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) || ctx.Err() != nil {
					return
				}
				r, err := l.verifySession(ctx, ids[i], dense)
				if err != nil {
					errs[i] = err
					cancel()
					return
				}
				if !r.OK() {
					failed[i] = &r
				}
				mu.Lock()
				n++
				events += int64(r.EventCount)
				done(n, events)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return failed, nil
}

// verifyFullWorkers is how many chains VerifyFull verifies at once.
func verifyFullWorkers() int { return min(16, 2*runtime.GOMAXPROCS(0)) }

// rebuildLog recomputes the tree from the event hashes in log order.
func (l *Ledger) rebuildLog(ctx context.Context, tx ReadTx, rep *StartupReport) error {
	size, err := tx.LogSize(ctx)
	if err != nil {
		return err
	}
	rep.LogSize = size
	cps, err := tx.Checkpoints(ctx)
	if err != nil {
		return err
	}
	if len(cps) > 0 {
		rep.CheckpointSize = cps[len(cps)-1].TreeSize
	}
	mem := map[int64]Hash{}
	r := &txHashReader{ctx: ctx, staged: mem}
	cpi := 0
	checkCP := func(n int64) {
		for cpi < len(cps) && cps[cpi].TreeSize == n {
			cp := &cps[cpi]
			if err := VerifyCheckpoint(cp, l.origin, l.issuerPub); err != nil {
				rep.Problems = append(rep.Problems, err.Error())
			}
			if root, err := tlog.TreeHash(n, r); err != nil || Hash(root) != cp.Root {
				rep.Problems = append(rep.Problems, fmt.Sprintf("checkpoint %d: the events give a different root: the log was rewritten", n))
			}
			cpi++
		}
	}
	var n int64
	const page = 4096
	for n < size {
		evs, err := tx.EventsByLog(ctx, n, page)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			break
		}
		lo := tlog.StoredHashIndex(0, n)
		stored, err := tx.HashRange(ctx, lo, tlog.StoredHashCount(n+int64(len(evs))))
		if err != nil {
			return err
		}
		have := make(map[int64]Hash, len(stored))
		for _, h := range stored {
			have[h.Index] = h.Hash
		}
		for i := range evs {
			ev := &evs[i]
			if ev.LogIndex != n {
				rep.Problems = append(rep.Problems, fmt.Sprintf("log leaf %d has no event", n))
				return nil
			}
			checkCP(n)
			hs, err := tlog.StoredHashes(n, ev.Hash[:], r)
			if err != nil {
				return bug(err)
			}
			base := tlog.StoredHashIndex(0, n)
			for j, h := range hs {
				mem[base+int64(j)] = Hash(h)
				if got, ok := have[base+int64(j)]; !ok || got != Hash(h) {
					rep.Problems = append(rep.Problems, fmt.Sprintf("stored log hash %d (leaf %d) differs from the one rebuilt from the events", base+int64(j), n))
					return nil
				}
			}
			n++
			// Keep only what the next leaves can need.
			if n%page == 0 {
				keep := map[int64]Hash{}
				for _, ix := range frontierIndexes(n) {
					keep[ix] = mem[ix]
				}
				mem = keep
				r.staged = mem
			}
		}
	}
	checkCP(n)
	if cpi < len(cps) {
		rep.Problems = append(rep.Problems, fmt.Sprintf("checkpoint %d is larger than the log (%d leaves)", cps[cpi].TreeSize, n))
	}
	return nil
}

// verifySig checks one event signature.
func verifySig(pub ed25519.PublicKey, ev *Event) bool {
	return len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, ev.Hash[:], ev.Signature)
}
