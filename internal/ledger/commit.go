package ledger

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"
)

// Group commit. Every write goes through one committer goroutine per
// Ledger, which gathers the requests waiting at that moment (up to
// maxBatch) and applies them in one database transaction under the
// ledger-wide write lock: one fsync for many events. Inside the
// transaction it reads the current chain heads from the database (so
// other processes sharing it are seen), assigns sequences and log
// indexes, hashes, signs and computes the Merkle hashes. A request that
// fails validation fails alone; a failed transaction is retried request by
// request so one bad request cannot fail its neighbours.

// request is one write waiting for the committer.
type request struct {
	ctx context.Context
	// sessions are the chains whose heads apply needs (preloaded in one
	// query per batch).
	sessions []uuid.UUID
	// apply stages the request's rows in b. It returns an error only
	// before staging anything, or after staging a consistent alternative
	// (see Append's goal check).
	apply func(b *batch) (any, error)
	res   any
	err   error
	done  chan struct{}
}

// submit queues a request and waits for its outcome. The request is
// skipped if ctx ends before the committer reaches it; once its
// transaction has started it runs to completion, so a returned error never
// hides a committed write.
func (l *Ledger) submit(ctx context.Context, sessions []uuid.UUID, apply func(*batch) (any, error)) (any, error) {
	r := &request{ctx: ctx, sessions: sessions, apply: apply, done: make(chan struct{})}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, ErrClosed
	}
	select {
	case l.reqs <- r:
	case <-ctx.Done():
		l.mu.RUnlock()
		return nil, ctx.Err()
	}
	l.mu.RUnlock()
	<-r.done
	return r.res, r.err
}

func (l *Ledger) commitLoop() {
	defer l.wg.Done()
	if l.remembers != nil {
		// The only sender: rememberLoop ends after what is queued.
		defer close(l.remembers)
	}
	for r := range l.reqs {
		reqs := []*request{r}
	gather:
		for len(reqs) < maxBatch {
			select {
			case r2, ok := <-l.reqs:
				if !ok {
					break gather
				}
				reqs = append(reqs, r2)
			default:
				break gather
			}
		}
		l.runBatch(reqs)
	}
}

// runBatch applies reqs in one transaction and reports to each.
func (l *Ledger) runBatch(reqs []*request) {
	live := reqs[:0:0]
	for _, r := range reqs {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	var ids []uuid.UUID
	for _, r := range live {
		ids = append(ids, r.sessions...)
	}
	var b *batch
	err := l.b.Update(l.bg, func(tx WriteTx) error {
		var err error
		if b, err = l.newBatch(l.bg, tx, ids); err != nil {
			return err
		}
		for _, r := range live {
			r.res, r.err = r.apply(b)
			if b.fatal != nil {
				return b.fatal
			}
		}
		if err := b.checkpointIfDue(); err != nil {
			return err
		}
		return tx.Apply(l.bg, &b.ch)
	})
	if err != nil {
		if len(live) > 1 {
			for _, r := range live {
				r.res, r.err = nil, nil
				l.runBatch([]*request{r})
			}
			return
		}
		live[0].res, live[0].err = nil, err
	} else {
		l.afterCommit(b)
		// The remembered-checkpoint file is a lower bound for the
		// rollback check, so a crash before it is written loses nothing
		// the database does not hold: rememberLoop writes it, and its
		// write and fsync stay off the latency of the commit (an exec's
		// reply). It is queued before the waiters are released because
		// the Go scheduler runs the goroutine readied last first on this
		// processor: the waiter then runs ahead of the file's write, not
		// behind it (TestReleasedWaiterRunsFirst).
		l.queueRemember(b)
	}
	for _, r := range live {
		close(r.done)
	}
}

// queueRemember hands a committed batch's newest checkpoint to
// rememberLoop, when the ledger keeps a remembered-checkpoint file.
func (l *Ledger) queueRemember(b *batch) {
	if n := len(b.ch.Checkpoints); n > 0 && l.remembers != nil {
		l.remembers <- b.ch.Checkpoints[n-1]
	}
}

// rememberLoop writes the checkpoints committed batches queue to the
// remembered-checkpoint file, in commit order; of several queued only the
// newest is written (each one extends those before it), and with
// Options.CheckpointFileDelay it gathers them for that long first. It
// ends once commitLoop has ended and everything queued is written (Close
// waits; a delay under way ends with the queue).
func (l *Ledger) rememberLoop() {
	defer l.wg.Done()
	for cp := range l.remembers {
		if l.cpDelay > 0 {
			cp = l.gatherRemembers(cp)
		}
	newest:
		for {
			select {
			case next, ok := <-l.remembers:
				if !ok {
					break newest
				}
				cp = next
			default:
				break newest
			}
		}
		l.rememberOrWarn(cp)
	}
}

// gatherRemembers returns the newest of cp and the checkpoints queued
// within the delay, or until the queue closes.
func (l *Ledger) gatherRemembers(cp Checkpoint) Checkpoint {
	t := time.NewTimer(l.cpDelay)
	defer t.Stop()
	for {
		select {
		case next, ok := <-l.remembers:
			if !ok {
				return cp
			}
			cp = next
		case <-t.C:
			return cp
		}
	}
}

// maxCachedChains bounds the per-process caches of session keys and goal
// hashes.
const maxCachedChains = 10000

// batch is the state of one write transaction.
type batch struct {
	l   *Ledger
	ctx context.Context
	tx  WriteTx
	now int64
	// logSize is the next free log index.
	logSize int64
	heads   map[uuid.UUID]*SessionHead
	// keys and goals stage cache entries until commit.
	keys  map[uuid.UUID]*chainKey
	goals map[uuid.UUID]string
	// staged holds the Merkle hashes computed in this batch.
	staged map[int64]Hash
	reader *txHashReader
	ch     Changes
	// eventsSinceCP counts the leaves other than checkpoint events added
	// since the newest checkpoint known.
	cpSize int64
	// fatal, once set, aborts the whole transaction: a staged write could
	// not be completed consistently.
	fatal error
}

func (l *Ledger) newBatch(ctx context.Context, tx WriteTx, ids []uuid.UUID) (*batch, error) {
	size, err := tx.LogSize(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: log size: %w", err)
	}
	b := &batch{
		l: l, ctx: ctx, tx: tx, now: l.nowMicros(), logSize: size,
		heads: map[uuid.UUID]*SessionHead{}, keys: map[uuid.UUID]*chainKey{}, goals: map[uuid.UUID]string{},
		staged: map[int64]Hash{}, cpSize: l.lastCP,
	}
	b.reader = &txHashReader{ctx: ctx, tx: tx, staged: b.staged, memo: l.frontier}
	if err := b.loadHeads(append(ids, InstanceSessionID)); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *batch) loadHeads(ids []uuid.UUID) error {
	var need []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, id := range ids {
		if _, ok := b.heads[id]; !ok && !seen[id] {
			seen[id] = true
			need = append(need, id)
		}
	}
	if len(need) == 0 {
		return nil
	}
	heads, err := b.tx.SessionHeads(b.ctx, need)
	if err != nil {
		return fmt.Errorf("ledger: read session heads: %w", err)
	}
	for _, id := range need {
		if h, ok := heads[id]; ok {
			b.heads[id] = &h
		} else {
			b.heads[id] = nil
		}
	}
	return nil
}

// head returns the head of a session, or ErrNotFound.
func (b *batch) head(id uuid.UUID) (*SessionHead, error) {
	if err := b.loadHeads([]uuid.UUID{id}); err != nil {
		return nil, err
	}
	h := b.heads[id]
	if h == nil || !h.HasEvents {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return h, nil
}

// chainKey returns the signing key in force for a chain whose tip is h.
func (b *batch) chainKey(h *SessionHead) (*chainKey, error) {
	if k := b.keys[h.ID]; k != nil {
		return k, nil
	}
	if h.ID == InstanceSessionID {
		k := &chainKey{key: b.l.issuer, keyID: KeyID(b.l.issuerPub), seenSeq: h.LastSeq}
		b.keys[h.ID] = k
		return k, nil
	}
	if k := b.l.keys[h.ID]; k != nil && k.seenSeq == h.LastSeq {
		return k, nil
	}
	rows, err := b.tx.Keys(b.ctx, h.ID)
	if err != nil {
		return nil, fmt.Errorf("ledger: read keys of session %s: %w", h.ID, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("session %s has no key rows: %w", h.ID, ErrKeyUnavailable)
	}
	row := rows[len(rows)-1]
	kk := b.l.keks[row.KEK]
	if kk == nil {
		return nil, fmt.Errorf("session %s: its key is encrypted with the %s KEK, which this process lacks (set ECTO_KEY_PASSPHRASE): %w", h.ID, row.KEK, ErrKeyUnavailable)
	}
	seed, err := kk.open(row.EncryptedPrivate, keyAAD(h.ID, row.ValidFromSeq, row.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("session %s: decrypt key %s with the %s KEK: %w", h.ID, row.KeyID, row.KEK, ErrKeyUnavailable)
	}
	sk, err := SigningKeyFromSeed(seed)
	if err != nil || !sk.Public().Equal(row.PublicKey) {
		return nil, fmt.Errorf("session %s: key row %s does not hold the private half of its public key: %w", h.ID, row.KeyID, ErrKeyUnavailable)
	}
	k := &chainKey{key: sk, keyID: row.KeyID, validFrom: row.ValidFromSeq, rotations: len(rows) - 1, seenSeq: h.LastSeq}
	b.keys[h.ID] = k
	return k, nil
}

// keyAAD binds an encrypted key to its row.
func keyAAD(session uuid.UUID, validFrom uint64, pub []byte) []byte {
	aad := make([]byte, 0, 16+8+32+16)
	aad = append(aad, "ironvise/key/v1"...)
	aad = append(aad, session[:]...)
	aad = append(aad, byte(validFrom>>56), byte(validFrom>>48), byte(validFrom>>40), byte(validFrom>>32),
		byte(validFrom>>24), byte(validFrom>>16), byte(validFrom>>8), byte(validFrom))
	return append(aad, pub...)
}

// appendEvent stages the next event of h's chain. signer is SignerSession
// or SignerIssuer. It stages nothing when it fails.
func (b *batch) appendEvent(h *SessionHead, typ string, payload []byte, signer string) (Event, error) {
	var seq uint64
	prev := GenesisPrevHash(h.ID)
	if h.HasEvents {
		seq = h.LastSeq + 1
		prev = h.LastHash
	}
	ev := Event{
		LogIndex: b.logSize, SessionID: h.ID, Seq: seq, Type: typ, Payload: payload,
		CreatedMicros: b.now, PrevHash: prev, Signer: signer,
	}
	ev.Hash = EventHash(prev, h.ID, seq, ev.CreatedMicros, typ, payload)
	switch signer {
	case SignerSession:
		k, err := b.chainKey(h)
		if err != nil {
			return Event{}, err
		}
		ev.Signature, ev.KeyID, ev.PublicKey = k.key.Sign(ev.Hash), k.keyID, k.key.Public()
	case SignerIssuer:
		ev.Signature, ev.KeyID, ev.PublicKey = b.l.issuer.Sign(ev.Hash), KeyID(b.l.issuerPub), b.l.issuerPub
	default:
		return Event{}, bug(fmt.Errorf("unknown signer %q", signer))
	}
	stored, err := tlog.StoredHashes(ev.LogIndex, ev.Hash[:], b.reader)
	if err != nil {
		return Event{}, fmt.Errorf("ledger: merkle hashes of leaf %d: %w", ev.LogIndex, err)
	}
	base := tlog.StoredHashIndex(0, ev.LogIndex)
	for i, sh := range stored {
		b.staged[base+int64(i)] = Hash(sh)
		b.ch.Hashes = append(b.ch.Hashes, StoredHash{Index: base + int64(i), Hash: Hash(sh)})
	}
	b.ch.Events = append(b.ch.Events, ev)
	b.logSize++
	h.HasEvents, h.LastSeq, h.LastHash = true, seq, ev.Hash
	return ev, nil
}

// nonCheckpointLeaves reports whether leaves other than the newest
// checkpoint's own event exist beyond it. A checkpoint of size n is always
// followed by its checkpoint event at leaf n.
func (b *batch) nonCheckpointLeaves() int64 {
	if b.cpSize == 0 && b.logSize == 0 {
		return 0
	}
	return b.logSize - b.cpSize - 1
}

// checkpointIfDue writes a checkpoint when ECTO_CHECKPOINT_EVENTS events
// were added since the newest one.
func (b *batch) checkpointIfDue() error {
	if b.nonCheckpointLeaves() < b.l.cpEvents {
		return nil
	}
	return b.refreshAndCheckpoint()
}

// refreshAndCheckpoint rereads the newest checkpoint (another process may
// have written one) and writes a new one if leaves were added since.
func (b *batch) refreshAndCheckpoint() error {
	cp, err := b.tx.LatestCheckpoint(b.ctx)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("ledger: read latest checkpoint: %w", err)
	}
	if err == nil && cp.TreeSize > b.cpSize {
		b.cpSize = cp.TreeSize
	}
	if b.nonCheckpointLeaves() <= 0 {
		return nil
	}
	return b.writeCheckpoint()
}

// checkpointPayload is the payload of a checkpoint event
// (docs/design/api.md#event-payloads).
type checkpointPayload struct {
	TreeSize  int64  `json:"tree_size"`
	RootHash  string `json:"root_hash"`
	Timestamp string `json:"timestamp"`
	KeyID     string `json:"key_id"`
	Signature string `json:"signature"`
}

// TimeFormat is the API timestamp layout: UTC RFC 3339 with exactly six
// fractional digits (docs/design/api.md#json-shapes).
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// writeCheckpoint signs the tree head of the current log and records it on
// the instance chain. A failure here is fatal to the batch: rows staged
// before it may already rely on the checkpoint (a seal names it).
func (b *batch) writeCheckpoint() error {
	size := b.logSize
	root, err := tlog.TreeHash(size, b.reader)
	if err != nil {
		return fmt.Errorf("ledger: tree hash of size %d: %w", size, err)
	}
	cp, err := signCheckpoint(b.l.origin, size, Hash(root), b.l.issuer)
	if err != nil {
		return err
	}
	cp.CreatedMicros = b.now
	cp.EventLogIndex = size
	payload, err := canonicalPayload(TypeCheckpoint, OriginIronVise, checkpointPayload{
		TreeSize: size, RootHash: cp.Root.String(), Timestamp: time.UnixMicro(b.now).UTC().Format(TimeFormat),
		KeyID: cp.KeyID, Signature: hex.EncodeToString(cp.Signature),
	})
	if err != nil {
		return bug(err)
	}
	ih, err := b.head(InstanceSessionID)
	if err != nil {
		return fmt.Errorf("ledger: instance chain: %w", err)
	}
	if _, err := b.appendEvent(ih, TypeCheckpoint, payload, SignerSession); err != nil {
		return err
	}
	b.ch.Checkpoints = append(b.ch.Checkpoints, cp)
	b.cpSize = size
	return nil
}

// instanceGenesis is the payload of the instance chain's sequence 0.
type instanceGenesis struct {
	Message          string `json:"message"`
	Nonce            string `json:"nonce"`
	SessionPublicKey string `json:"session_public_key"`
	InstanceID       string `json:"instance_id"`
	Origin           string `json:"origin"`
	HashVersion      string `json:"hash_version"`
}

func (b *batch) createInstanceSession() error {
	nonce := make([]byte, 16)
	if _, err := b.l.rand.Read(nonce); err != nil {
		return fmt.Errorf("ledger: nonce: %w", err)
	}
	s := Session{
		ID: InstanceSessionID, Status: StatusRunning, CreatedAt: fromMicros(b.now),
		PublicKey: b.l.issuerPub, DID: DIDKey(b.l.issuerPub),
	}
	b.ch.NewSessions = append(b.ch.NewSessions, s)
	b.ch.Keys = append(b.ch.Keys, KeyRecord{
		SessionID: InstanceSessionID, KeyID: KeyID(b.l.issuerPub), PublicKey: b.l.issuerPub, KEK: "", CreatedMicros: b.now,
	})
	h := &SessionHead{ID: InstanceSessionID, Status: StatusRunning}
	b.heads[InstanceSessionID] = h
	payload, err := canonicalPayload(TypeGenesis, OriginIronVise, instanceGenesis{
		Message: instanceGenesisMsg, Nonce: hex.EncodeToString(nonce), SessionPublicKey: hex.EncodeToString(b.l.issuerPub),
		InstanceID: b.l.instanceID, Origin: b.l.origin, HashVersion: HashVersion,
	})
	if err != nil {
		return bug(err)
	}
	_, err = b.appendEvent(h, TypeGenesis, payload, SignerSession)
	return err
}

// afterCommit publishes a committed batch's cache entries and gives its
// newest checkpoint to OnCheckpoint; rememberLoop (rememberCommitted at
// start-up) keeps it beside the keys.
func (l *Ledger) afterCommit(b *batch) {
	if n := len(b.ch.Checkpoints); n > 0 {
		cp := b.ch.Checkpoints[n-1]
		if l.onCheckpoint != nil {
			for i := range b.ch.Events {
				if ev := &b.ch.Events[i]; ev.LogIndex == cp.EventLogIndex && ev.Type == TypeCheckpoint {
					l.onCheckpoint(cp, *ev)
				}
			}
		}
	}
	for id, k := range b.keys {
		if h := b.heads[id]; h != nil {
			k.seenSeq = h.LastSeq
		}
		l.keys[id] = k
	}
	for id, h := range b.heads {
		if h == nil {
			continue
		}
		if k := l.keys[id]; k != nil {
			if h.Sealed {
				delete(l.keys, id) // a sealed chain never signs again
				delete(l.goals, id)
				continue
			}
			k.seenSeq = h.LastSeq
		}
	}
	for id, g := range b.goals {
		l.goals[id] = g
	}
	// Both maps are caches of what the database holds (keys are
	// re-decrypted, goals re-read from genesis), so a process that touches
	// very many sessions drops them rather than growing without bound.
	if len(l.keys) > maxCachedChains {
		l.keys = map[uuid.UUID]*chainKey{}
	}
	if len(l.goals) > maxCachedChains {
		l.goals = map[uuid.UUID]string{}
	}
	// Keep only the frontier of the new size: exactly what the next
	// append and tree hash read.
	next := map[int64]Hash{}
	for _, ix := range frontierIndexes(b.logSize) {
		if h, ok := b.staged[ix]; ok {
			next[ix] = h
		} else if h, ok := l.frontier[ix]; ok {
			next[ix] = h
		}
	}
	l.frontier = next
	if b.cpSize > l.lastCP {
		l.lastCP = b.cpSize
		l.lastCPAt = l.clock()
	}
}

// ownPayload canonicalises a payload struct the ledger builds itself, so a
// failure is a bug.
func ownPayload(typ string, v any) ([]byte, error) {
	p, err := canonicalPayload(typ, OriginIronVise, v)
	if err != nil {
		return nil, bug(err)
	}
	return p, nil
}

// rememberCommitted writes a committed batch's newest checkpoint to the
// remembered-checkpoint file, when the ledger keeps one.
func (l *Ledger) rememberCommitted(b *batch) {
	if n := len(b.ch.Checkpoints); n > 0 && l.cpFile != "" {
		l.rememberOrWarn(b.ch.Checkpoints[n-1])
	}
}

// rememberOrWarn writes cp to the remembered-checkpoint file. The
// checkpoint is committed either way; a file that could not be written
// only weakens the rollback check, so the log says so.
func (l *Ledger) rememberOrWarn(cp Checkpoint) {
	if err := l.rememberCheckpoint(cp); err != nil {
		l.log.Warn("could not remember the newest checkpoint outside the database", "err", err)
	}
}
