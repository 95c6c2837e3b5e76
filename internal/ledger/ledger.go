package ledger

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Defaults of docs/design/ledger.md#merkle-log and
// docs/design/ledger.md#session-lifecycle.
const (
	DefaultCheckpointEvents   = 1000
	DefaultCheckpointInterval = 60 * time.Second
	DefaultLeaseDuration      = 30 * time.Second
	DefaultLeaseRenewInterval = 10 * time.Second
	// maxBatch bounds one group commit.
	maxBatch = 512
	// rememberQueue bounds the checkpoints waiting for rememberLoop; a
	// commit waits for room only when the file's writes fall this far
	// behind.
	rememberQueue = 16
)

// Secret is a string that never prints: ECTO_KEY_PASSPHRASE travels in
// one, so an Options value can be logged without leaking it.
type Secret string

// String implements fmt.Stringer with a redacted value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer with a redacted value.
func (s Secret) GoString() string { return s.String() }

// Options configure a Ledger. The zero value of each field selects the
// documented default.
type Options struct {
	// DataDir holds keys/issuer.ed25519 (created on first run). Required
	// unless IssuerKey is set.
	DataDir string
	// IssuerKey, when set, is used instead of the data-dir key (tests,
	// embedding).
	IssuerKey *SigningKey
	// IssuerKeyFile is ECTO_ISSUER_KEY_FILE: the issuer key's file when it
	// is kept outside the data dir ("" is keys/issuer.ed25519 in DataDir).
	// With Passphrase set the file is encrypted under it.
	IssuerKeyFile string
	// Passphrase is ECTO_KEY_PASSPHRASE: when set, session private keys are
	// encrypted under a KEK derived from it instead of from the issuer key,
	// so any process with the passphrase can continue a session.
	Passphrase Secret
	// CheckpointEvents writes a checkpoint after this many events (1000).
	CheckpointEvents int
	// CheckpointInterval writes a checkpoint this often when events were
	// added (60 s); negative disables the timer.
	CheckpointInterval time.Duration
	// OwnerID identifies this process in session leases (default: host,
	// pid and a random suffix). A caller that sets a stable id (serve keeps
	// one per data directory) must make sure one live process at a time
	// holds it: Owned takes the sessions of that id for a dead
	// predecessor's (reclaim.go).
	OwnerID string
	// LeaseDuration is how long a session stays this process's after its
	// last renewal (docs/design/ledger.md#session-lifecycle; default 30 s), and
	// LeaseRenewInterval how often the renewal runs (default a third of
	// LeaseDuration, 10 s). The interval must be shorter than the lease, or the
	// lease lapses between renewals and another process's Recover fails a
	// session that is still running here.
	LeaseDuration      time.Duration
	LeaseRenewInterval time.Duration
	// CheckpointFile is where the newest checkpoint this process wrote is
	// remembered outside the database (RememberedCheckpointPath of
	// DataDir by default; "-" keeps none). New refuses a database whose
	// log is older than it or not an extension of it (ErrRolledBack).
	CheckpointFile string
	// CheckpointFileUnsynced writes the remembered checkpoint without an
	// fsync: for a process that records one command and exits, whose
	// exit would otherwise wait for it (the fourth fsync of a standalone
	// exec). The rename still replaces the file whole. After a power cut
	// it may hold an older checkpoint, which only narrows the rollback
	// check to that one, or on some file systems be empty, which New
	// takes as no file (docs/ledger.md#rollback-and-forks). A long-running
	// process (serve) leaves it false: its write is off every commit's
	// latency anyway.
	CheckpointFileUnsynced bool
	// CheckpointFileDelay is how long the remembered checkpoint's writer
	// gathers newer checkpoints before it writes the newest: a process
	// that commits many times a second (serve) then writes the file, and
	// pays its fsync, once per delay instead of once per commit (each
	// exec through serve seals a session, which signs a checkpoint). The file is a
	// lower bound for the rollback check, so being up to this much behind
	// narrows that check by the commits of that time, as a crash before
	// the write always could. Close writes what was gathered at once.
	// 0 writes each checkpoint as soon as it is committed.
	CheckpointFileDelay time.Duration
	// OnCheckpoint, when set, is called with every checkpoint after it is
	// committed, and with the instance-chain event that records it (to
	// send it to SIEM webhooks, so a copy lives outside the operator's
	// database). It runs on the committer and must not block.
	OnCheckpoint func(cp Checkpoint, record Event)
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Clock returns the current time (tests move it); nil is time.Now.
	Clock func() time.Time
	// Rand is the randomness for keys and nonces; nil is crypto/rand.
	Rand io.Reader
}

// Ledger is the evidence store: sessions, signed hash chains, the Merkle
// log and its checkpoints over a [Backend]. It is safe for concurrent use.
// The caller must call Close.
type Ledger struct {
	b          Backend
	log        *slog.Logger
	clock      func() time.Time
	rand       io.Reader
	issuer     *SigningKey
	issuerPub  ed25519.PublicKey
	instanceID string
	origin     string
	// cpFile is Options.CheckpointFile resolved ("" when none);
	// onCheckpoint is Options.OnCheckpoint.
	cpFile string
	// cpSync is !Options.CheckpointFileUnsynced.
	cpSync bool
	// cpDelay is Options.CheckpointFileDelay.
	cpDelay time.Duration
	// cpNote is the note the remembered-checkpoint file holds, as this
	// process last read or wrote it (New, then rememberLoop only).
	cpNote []byte
	// remembers queues committed checkpoints for rememberLoop (nil
	// without a remembered-checkpoint file).
	remembers    chan Checkpoint
	onCheckpoint func(Checkpoint, Event)
	// beforeRemember, when set (by tests only), runs before the
	// remembered-checkpoint file is written.
	beforeRemember func()
	// keks holds the available key-encryption keys by kind; writeKEK
	// encrypts new session keys.
	keks     map[string]*kek
	writeKEK *kek
	// legacyKEK is the HKDF passphrase KEK of ledgers written before
	// Argon2id, held only until checkPassphrase has migrated them.
	legacyKEK *kek
	owner     string

	cpEvents   int64
	cpInterval time.Duration
	lease      time.Duration
	renewEvery time.Duration

	// bg is the context of the background goroutines and of the commit
	// transactions; stop cancels it after the committer has drained.
	bg   context.Context
	stop context.CancelFunc

	// mu guards closed; submit holds it for reading while sending, so
	// Close (which takes it for writing) cannot close reqs under a sender.
	mu     sync.RWMutex
	closed bool
	reqs   chan *request
	done   chan struct{} // closed by Close to stop the tickers
	wg     sync.WaitGroup

	// Committer state: touched only by the committer goroutine (and by
	// New before it starts), so it needs no lock.
	keys     map[uuid.UUID]*chainKey
	goals    map[uuid.UUID]string
	frontier map[int64]Hash
	lastCP   int64 // tree size of the newest checkpoint known
	lastCPAt time.Time
}

// chainKey is the signing key in force for a chain, as this process knows
// it.
type chainKey struct {
	key       *SigningKey
	keyID     string
	validFrom uint64
	rotations int
	// seenSeq is the chain tip when this was last confirmed; a head beyond
	// it means another process appended (maybe rotated), so the key is
	// reloaded.
	seenSeq uint64
}

// New opens a Ledger on b: it loads or creates the issuer key, on an empty
// ledger writes the instance genesis and the first checkpoint, checks the
// passphrase, and starts the committer, the lease renewer and the
// checkpoint timer. It does not recover crashed sessions or verify the
// ledger; call Recover and VerifyStartup for that.
func New(ctx context.Context, b Backend, opts Options) (*Ledger, error) {
	l := &Ledger{
		b:          b,
		log:        opts.Logger,
		clock:      opts.Clock,
		rand:       opts.Rand,
		owner:      opts.OwnerID,
		cpEvents:   int64(opts.CheckpointEvents),
		cpInterval: opts.CheckpointInterval,
		lease:      opts.LeaseDuration,
		renewEvery: opts.LeaseRenewInterval,
		reqs:       make(chan *request, 4*maxBatch),
		done:       make(chan struct{}),
		keys:       map[uuid.UUID]*chainKey{},
		goals:      map[uuid.UUID]string{},
		frontier:   map[int64]Hash{},
		keks:       map[string]*kek{},
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.clock == nil {
		l.clock = time.Now
	}
	if l.rand == nil {
		l.rand = rand.Reader
	}
	if l.cpEvents <= 0 {
		l.cpEvents = DefaultCheckpointEvents
	}
	if l.cpInterval == 0 {
		l.cpInterval = DefaultCheckpointInterval
	}
	if l.lease <= 0 {
		l.lease = DefaultLeaseDuration
	}
	if l.renewEvery <= 0 {
		// A third of the lease: two renewals may fail or run late before
		// the lease lapses (the defaults give 10 s of 30 s).
		l.renewEvery = l.lease / 3
	}
	if l.renewEvery >= l.lease {
		return nil, fmt.Errorf("ledger: LeaseRenewInterval %s is not shorter than LeaseDuration %s: the lease would lapse between renewals; leave LeaseRenewInterval zero for a third of the lease", l.renewEvery, l.lease)
	}
	if l.owner == "" {
		host, _ := os.Hostname()
		l.owner = host + "/" + strconv.Itoa(os.Getpid()) + "/" + uuid.NewString()[:8]
	}
	l.issuer = opts.IssuerKey
	if l.issuer == nil {
		path := opts.IssuerKeyFile
		if path == "" {
			if opts.DataDir == "" {
				return nil, errors.New("ledger: issuer key: no data dir (set ECTO_DATA_DIR) and no ECTO_ISSUER_KEY_FILE")
			}
			path = IssuerKeyPath(opts.DataDir)
		}
		k, created, err := LoadOrCreateIssuerKeyAt(path, opts.Passphrase)
		if err != nil {
			return nil, err
		}
		if created {
			l.log.Info("created issuer key", "path", path, "key_id", k.KeyID(), "encrypted", opts.Passphrase != "")
		}
		l.issuer = k
	}
	l.issuerPub = l.issuer.Public()
	l.instanceID = KeyID(l.issuerPub)
	l.origin = OriginPrefix + l.instanceID
	ik, err := newKEK(kekIssuer, l.issuer.seed(), l.instanceID)
	if err != nil {
		return nil, err
	}
	l.keks[kekIssuer] = ik
	l.writeKEK = ik
	if opts.Passphrase != "" {
		// The HKDF KEK only migrates what was written before the work
		// factor (checkPassphrase); nothing reads or writes under it
		// after New.
		if l.legacyKEK, err = newKEK(kekPassphrase, []byte(opts.Passphrase), l.instanceID); err != nil {
			return nil, err
		}
		pk, err := newPassphraseKEK([]byte(opts.Passphrase), l.instanceID)
		if err != nil {
			return nil, err
		}
		l.keks[kekPassphraseArgon2id] = pk
		l.writeKEK = pk
	}
	l.onCheckpoint = opts.OnCheckpoint
	switch {
	case opts.CheckpointFile == "-":
	case opts.CheckpointFile != "":
		l.cpFile = opts.CheckpointFile
	case opts.DataDir != "":
		l.cpFile = RememberedCheckpointPath(opts.DataDir)
	}
	l.cpSync = !opts.CheckpointFileUnsynced
	l.cpDelay = opts.CheckpointFileDelay
	if l.cpFile != "" {
		// Before initialize: on an emptied database it would write a new
		// first checkpoint and overwrite what was remembered.
		if err := l.checkRemembered(ctx); err != nil {
			return nil, err
		}
	}
	l.bg, l.stop = context.WithCancel(context.WithoutCancel(ctx))
	if err := l.initialize(ctx); err != nil {
		l.stop()
		return nil, err
	}
	if l.cpFile != "" {
		if err := l.rememberLatest(ctx); err != nil {
			l.stop()
			return nil, err
		}
	}
	if l.cpFile != "" {
		l.remembers = make(chan Checkpoint, rememberQueue)
		l.wg.Add(1)
		go l.rememberLoop()
	}
	l.wg.Add(1)
	go l.commitLoop()
	l.wg.Add(1)
	go l.leaseLoop()
	if l.cpInterval > 0 {
		l.wg.Add(1)
		go l.checkpointLoop()
	}
	return l, nil
}

// Meta keys.
const (
	metaIssuerKey     = "issuer_public_key"
	metaKEKPassphrase = "kek_check_passphrase"
	// metaKEKPassphraseArgon2id is the check value under the Argon2id KEK
	// (a new ledger writes no HKDF check value, which would let a guess be
	// tested at HKDF speed).
	metaKEKPassphraseArgon2id = "kek_check_passphrase_argon2id"
	metaCreatedMicros         = "created_at_micros"
	metaHashVersion           = "event_hash_version"
	kekCheckAAD               = "ironvise/kek-check"
	instanceGenesisMsg        = "genesis"
)

// initialize binds the ledger to this issuer key and writes the instance
// genesis and first checkpoint of an empty ledger.
func (l *Ledger) initialize(ctx context.Context) error {
	return l.b.Update(ctx, func(tx WriteTx) error {
		pub, ok, err := tx.Meta(ctx, metaIssuerKey)
		if err != nil {
			return err
		}
		if ok {
			if !ed25519.PublicKey(pub).Equal(l.issuerPub) {
				// One ledger, one issuer: checkpoints and issuer-signed
				// events must verify with the key auditors pinned.
				return fmt.Errorf("%w: the ledger was created by issuer key %s, this data dir holds %s; copy keys/issuer.ed25519 from the instance that created the ledger (instances sharing a database share one issuer key)",
					ErrIssuerMismatch, KeyID(pub), l.instanceID)
			}
			if v, ok, err := tx.Meta(ctx, metaHashVersion); err != nil {
				return err
			} else if ok && string(v) != HashVersion {
				return fmt.Errorf("%w: ledger uses event hash %s, this build writes %s", ErrSchema, v, HashVersion)
			}
		} else {
			if err := tx.InsertMeta(ctx, metaIssuerKey, l.issuerPub); err != nil {
				return err
			}
			if err := tx.InsertMeta(ctx, metaHashVersion, []byte(HashVersion)); err != nil {
				return err
			}
			if err := tx.InsertMeta(ctx, metaCreatedMicros, []byte(strconv.FormatInt(l.nowMicros(), 10))); err != nil {
				return err
			}
		}
		if err := l.checkPassphrase(ctx, tx); err != nil {
			return err
		}
		b, err := l.newBatch(ctx, tx, nil)
		if err != nil {
			return err
		}
		if h := b.heads[InstanceSessionID]; h == nil {
			if err := b.createInstanceSession(); err != nil {
				return err
			}
			if err := b.writeCheckpoint(); err != nil {
				return err
			}
		}
		if err := tx.Apply(ctx, &b.ch); err != nil {
			return err
		}
		l.afterCommit(b)
		l.rememberCommitted(b)
		cp, err := tx.LatestCheckpoint(ctx)
		if err == nil {
			l.lastCP = cp.TreeSize
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		l.lastCPAt = l.clock()
		return nil
	})
}

// closeCheckpointTries is how many times Close tries its final checkpoint
// while the database is unavailable.
const closeCheckpointTries = 4

// Close writes a last checkpoint when events were added since the newest
// one, stops the background goroutines and closes the backend. ctx bounds
// the final checkpoint.
func (l *Ledger) Close(ctx context.Context) error {
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	_, cpErr := l.Checkpoint(ctx)
	for try := 1; try < closeCheckpointTries && cpErr != nil && Classify(cpErr).Kind == FailureUnavailable && ctx.Err() == nil; try++ {
		// A connection the database dropped while it sat in the pool
		// fails its first use; the pool then replaces it. The final
		// checkpoint is worth a few more attempts before the instance
		// stops with events no checkpoint covers.
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(try) * 50 * time.Millisecond):
		}
		_, cpErr = l.Checkpoint(ctx)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	close(l.reqs)
	close(l.done)
	l.mu.Unlock()
	l.wg.Wait()
	l.stop()
	err := l.b.Close()
	if cpErr != nil && !errors.Is(cpErr, ErrClosed) {
		return errors.Join(fmt.Errorf("ledger: final checkpoint: %w", cpErr), err)
	}
	return err
}

// Backend returns the storage the ledger runs on.
func (l *Ledger) Backend() Backend { return l.b }

// InstanceID returns the instance id: the key id of the issuer key.
func (l *Ledger) InstanceID() string { return l.instanceID }

// Origin returns the checkpoint origin, "ironvise/<instance id>".
func (l *Ledger) Origin() string { return l.origin }

// IssuerPublicKey returns the issuer public key that signs checkpoints and
// issuer-signed events.
func (l *Ledger) IssuerPublicKey() ed25519.PublicKey { return l.issuerPub }

// Issuer returns the issuer signing key, for the evidence package to sign
// certificates and credentials. Treat it as a secret.
func (l *Ledger) Issuer() *SigningKey { return l.issuer }

// CheckpointVerifierKey returns the note verifier key of this instance's
// checkpoints ("<origin>+<key hash>+<base64 key>"), the form signed-note
// tools accept.
func (l *Ledger) CheckpointVerifierKey() (string, error) {
	return CheckpointVerifierKey(l.origin, l.issuerPub)
}

// OwnerID returns this process's lease owner id.
func (l *Ledger) OwnerID() string { return l.owner }

func (l *Ledger) nowMicros() int64 { return l.clock().UnixMicro() }

// leaseLoop is the heartbeat of the sessions this process owns: while the
// Ledger is open it renews their leases every renewEvery, however long a
// command, a model call or an approval keeps a session busy, so no other
// process's Recover takes a live session for a dead one. Close stops it
// (done) and waits for it (wg).
func (l *Ledger) leaseLoop() { l.every(l.renewEvery, l.renewLeases) }

// renewLeases extends this process's leases once. The write is bounded by
// the lease itself: a renewal still pending when the lease ends is worth
// nothing, and an unbounded one would hold up Close on a stalled database.
func (l *Ledger) renewLeases() {
	ctx, cancel := context.WithTimeout(l.bg, l.lease)
	defer cancel()
	until := l.clock().Add(l.lease).UnixMicro()
	if err := l.b.RenewLeases(ctx, l.owner, until, 0); err != nil {
		l.log.Warn("ledger: renew session leases failed; other instances may recover these sessions once the lease lapses", "owner", l.owner, "err", err)
	}
}

// checkpointLoop writes a checkpoint every interval when events were added.
func (l *Ledger) checkpointLoop() {
	l.every(l.cpInterval, func() {
		if _, err := l.Checkpoint(l.bg); err != nil && !errors.Is(err, ErrClosed) {
			l.log.Warn("ledger: periodic checkpoint failed", "err", err)
		}
	})
}

// every runs fn each interval until Close (done), for the background
// loops Close waits for (wg).
func (l *Ledger) every(interval time.Duration, fn func()) {
	defer l.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
			fn()
		}
	}
}

// checkPassphrase checks ECTO_KEY_PASSPHRASE against the ledger's check
// values, adds the Argon2id check value when it is missing, and refuses a
// passphrase ledger opened without the passphrase: such a process would
// write new session keys protected only by the issuer key that sits
// beside the database.
//
// A ledger written before the Argon2id KEK is migrated here, in the
// opening transaction: its session keys and webhook bearer tokens wrapped
// under the HKDF passphrase KEK are re-wrapped under Argon2id and its HKDF
// check value is deleted, so no HKDF-speed guessing oracle is left in the
// database. The HKDF KEK is then dropped: it never opens anything again.
func (l *Ledger) checkPassphrase(ctx context.Context, tx WriteTx) error {
	legacy := l.legacyKEK
	l.legacyKEK = nil
	v1, has1, err := tx.Meta(ctx, metaKEKPassphrase)
	if err != nil {
		return err
	}
	v2, has2, err := tx.Meta(ctx, metaKEKPassphraseArgon2id)
	if err != nil {
		return err
	}
	pk := l.keks[kekPassphraseArgon2id]
	if pk == nil {
		if has1 || has2 {
			return fmt.Errorf("%w: this ledger protects its session keys with a passphrase, and ECTO_KEY_PASSPHRASE is not set; set it (without it new session keys would be protected only by the issuer key)", ErrPassphraseRequired)
		}
		return nil
	}
	wrong := fmt.Errorf("%w: ECTO_KEY_PASSPHRASE does not open the session keys of this ledger; set the passphrase it was created with", ErrPassphrase)
	switch {
	case has2:
		if _, err := pk.open(v2, []byte(kekCheckAAD)); err != nil {
			return wrong
		}
	case has1:
		if _, err := legacy.open(v1, []byte(kekCheckAAD)); err != nil {
			return wrong
		}
	}
	if !has2 {
		sealed, err := pk.seal(kekCheckPlaintext, []byte(kekCheckAAD))
		if err != nil {
			return err
		}
		if err := tx.InsertMeta(ctx, metaKEKPassphraseArgon2id, sealed); err != nil {
			return err
		}
	}
	// Only a ledger that still has its HKDF check value is migrated: once
	// it is gone, a row under the HKDF KEK is not opened (one planted
	// after the migration stays unreadable).
	if !has1 {
		return nil
	}
	if err := rewrapLegacy(ctx, tx, legacy, pk); err != nil {
		return err
	}
	return tx.DeleteMeta(ctx, metaKEKPassphrase)
}

// rewrapLegacy re-wraps every session key and webhook bearer token under
// the HKDF passphrase KEK (from) with the Argon2id one (to), with the same
// associated data. A row that from cannot open fails the migration: the
// passphrase opened the check value, so the row is damaged.
func rewrapLegacy(ctx context.Context, tx WriteTx, from, to *kek) error {
	keys, err := tx.KeysUnderKEK(ctx, kekPassphrase)
	if err != nil {
		return err
	}
	for _, k := range keys {
		aad := keyAAD(k.SessionID, k.ValidFromSeq, k.PublicKey)
		seed, err := from.open(k.EncryptedPrivate, aad)
		if err != nil {
			return fmt.Errorf("ledger: migrate session %s key %s to the Argon2id KEK: %w", k.SessionID, k.KeyID, ErrKeyUnavailable)
		}
		k.EncryptedPrivate, err = to.seal(seed, aad)
		clear(seed)
		if err != nil {
			return err
		}
		k.KEK = to.kind
		if err := tx.RewrapKey(ctx, k); err != nil {
			return err
		}
	}
	hooks, encs, err := tx.Webhooks(ctx)
	if err != nil {
		return err
	}
	for i, w := range hooks {
		ct, ok := bytes.CutPrefix(encs[i], []byte(kekPassphrase+":"))
		if !ok {
			continue
		}
		pt, err := from.open(ct, bearerAAD(w.ID))
		if err != nil {
			return fmt.Errorf("ledger: migrate webhook %s bearer token to the Argon2id KEK: %w", w.ID, ErrKeyUnavailable)
		}
		enc, err := to.seal(pt, bearerAAD(w.ID))
		if err != nil {
			return err
		}
		if err := tx.SetWebhookBearer(ctx, w.ID, append([]byte(to.kind+":"), enc...)); err != nil {
			return err
		}
	}
	return nil
}
