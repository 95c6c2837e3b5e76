package ledger

import (
	"context"

	"github.com/google/uuid"
)

// Backend is the storage a [Ledger] runs on. The sqlite and postgres
// packages implement it; the ledger does all hashing, signing and Merkle
// work, so a Backend only stores rows and enforces the write lock.
//
// Implementations must reject UPDATE, DELETE (and where the database has
// it, TRUNCATE) on events, keys, checkpoints and log hashes with triggers,
// and must pass the conformance suite in package ledgertest.
type Backend interface {
	// Kind names the backend ("sqlite" or "postgres").
	Kind() string
	// Update runs fn in one write transaction that holds the ledger-wide
	// write lock, so log indexes and per-session sequences are assigned by
	// one writer at a time across every process sharing the database. fn's
	// writes commit durably together, or not at all.
	Update(ctx context.Context, fn func(WriteTx) error) error
	// View runs fn in a read-only transaction with a consistent snapshot.
	View(ctx context.Context, fn func(ReadTx) error) error
	// RenewLeases sets lease_until of the running sessions owned by owner
	// to untilMicros; with dueBeforeMicros not zero, only of those whose
	// lease ends before it. It takes the write lock first, as Update does:
	// the rows it updates are the rows group commits lock, and taking them
	// in another order than a commit deadlocks on PostgreSQL.
	RenewLeases(ctx context.Context, owner string, untilMicros, dueBeforeMicros int64) error
	// Close releases the database.
	Close() error
}

// CommitNotifier is implemented by backends that can tell a process that
// some process committed events, without polling (PostgreSQL's
// LISTEN/NOTIFY). Instances sharing a database use it to stream each
// other's events at once; a reader must keep polling as well, because a
// notification may be lost while the listening connection reconnects.
type CommitNotifier interface {
	// CommitNotifications returns a channel that receives a value soon
	// after any process committed events (values are coalesced). The
	// channel is closed when ctx ends; the backend reconnects its
	// listener on failures meanwhile.
	CommitNotifications(ctx context.Context) (<-chan struct{}, error)
}

// SessionHead is what the append path needs about a session: its state
// and the tip of its chain.
type SessionHead struct {
	ID         uuid.UUID
	Status     Status
	Sealed     bool
	GoalHash   string
	OwnerID    string
	LeaseUntil int64
	// HasEvents is false for a session row without events (never seen
	// after a committed create).
	HasEvents bool
	LastSeq   uint64
	LastHash  Hash
}

// StoredHash is one stored Merkle hash at a tlog stored-hash index.
type StoredHash struct {
	Index int64
	Hash  Hash
}

// SessionUpdate changes the mutable columns of a session row. Nil fields
// are left alone.
type SessionUpdate struct {
	ID            uuid.UUID
	Status        *Status
	FinishedMicro *int64
	SealedMicro   *int64
}

// Changes are the rows one write batch adds, applied by WriteTx.Apply in
// dependency order: sessions, session updates, keys, events, hashes,
// checkpoints.
type Changes struct {
	NewSessions    []Session
	SessionUpdates []SessionUpdate
	Keys           []KeyRecord
	Events         []Event
	Hashes         []StoredHash
	Checkpoints    []Checkpoint
}

// Empty reports whether c adds nothing.
func (c *Changes) Empty() bool {
	return len(c.NewSessions) == 0 && len(c.SessionUpdates) == 0 && len(c.Keys) == 0 &&
		len(c.Events) == 0 && len(c.Hashes) == 0 && len(c.Checkpoints) == 0
}

// ReadTx reads a consistent snapshot of the ledger.
type ReadTx interface {
	// Meta returns an instance metadata value.
	Meta(ctx context.Context, key string) (value []byte, ok bool, err error)
	// LogSize returns the number of events in the log (max log_index + 1).
	LogSize(ctx context.Context) (int64, error)
	// ReadHashes returns the stored Merkle hashes at indexes, in order; a
	// missing index is an error.
	ReadHashes(ctx context.Context, indexes []int64) ([]Hash, error)
	// HashRange returns the stored hashes with lo <= index < hi, in order.
	HashRange(ctx context.Context, lo, hi int64) ([]StoredHash, error)
	// Session returns one session, or ErrNotFound.
	Session(ctx context.Context, id uuid.UUID) (Session, error)
	// Sessions lists sessions newest first (created, then id, descending),
	// excluding the instance session.
	Sessions(ctx context.Context, f SessionFilter) ([]Session, error)
	// SessionHeads returns the heads of the sessions that exist among ids.
	// Inside Update the rows are locked until commit where the database
	// has row locks.
	SessionHeads(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]SessionHead, error)
	// Events returns up to limit events of a session with seq >= fromSeq,
	// by seq (limit <= 0: all).
	Events(ctx context.Context, session uuid.UUID, fromSeq uint64, limit int) ([]Event, error)
	// EventsByLog returns up to limit events with log_index >= from, by
	// log index.
	EventsByLog(ctx context.Context, from int64, limit int) ([]Event, error)
	// CountEventsInLog counts the events with lo <= log_index < hi.
	CountEventsInLog(ctx context.Context, lo, hi int64) (int64, error)
	// FirstMissingLogIndex returns the smallest index in [lo, hi) that no
	// event has, or -1.
	FirstMissingLogIndex(ctx context.Context, lo, hi int64) (int64, error)
	// Keys returns a chain's key rows by ValidFromSeq.
	Keys(ctx context.Context, session uuid.UUID) ([]KeyRecord, error)
	// LatestCheckpoint returns the largest checkpoint, or ErrNotFound.
	LatestCheckpoint(ctx context.Context) (Checkpoint, error)
	// CheckpointBySize returns the checkpoint of a tree size, or ErrNotFound.
	CheckpointBySize(ctx context.Context, size int64) (Checkpoint, error)
	// Checkpoints returns every checkpoint by tree size.
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
	// RunningSessions returns the heads of the running sessions other than
	// the instance session.
	RunningSessions(ctx context.Context) ([]SessionHead, error)
	// SessionCounts counts the sessions other than the instance session by
	// status.
	SessionCounts(ctx context.Context) (map[Status]int64, error)

	// Token returns one API token by hash, or ErrNotFound.
	Token(ctx context.Context, hash string) (Token, error)
	// Tokens lists API tokens newest first.
	Tokens(ctx context.Context) ([]Token, error)
	// Webhook returns one webhook (bearer token still encrypted in
	// enc), or ErrNotFound.
	Webhook(ctx context.Context, id uuid.UUID) (w Webhook, enc []byte, err error)
	// Webhooks lists webhooks newest first, with their encrypted bearers.
	Webhooks(ctx context.Context) ([]Webhook, [][]byte, error)
	// PendingApproval returns the oldest undecided gate of a session, or
	// ErrNotFound.
	PendingApproval(ctx context.Context, session uuid.UUID) (Approval, error)
	// Approval returns one gate, or ErrNotFound.
	Approval(ctx context.Context, gate uuid.UUID) (Approval, error)
}

// WriteTx is a write transaction holding the ledger-wide write lock.
type WriteTx interface {
	ReadTx
	// InsertMeta stores a metadata value; the key must be new.
	InsertMeta(ctx context.Context, key string, value []byte) error
	// DeleteMeta deletes a metadata value; ErrNotFound if absent. The
	// triggers allow it for the HKDF passphrase check value only.
	DeleteMeta(ctx context.Context, key string) error
	// KeysUnderKEK returns every key row encrypted under a KEK kind.
	KeysUnderKEK(ctx context.Context, kek string) ([]KeyRecord, error)
	// RewrapKey replaces a key row's EncryptedPrivate and KEK, found by
	// SessionID and ValidFromSeq; the triggers allow it only from the
	// HKDF passphrase KEK to the Argon2id one.
	RewrapKey(ctx context.Context, k KeyRecord) error
	// SetWebhookBearer replaces a webhook's encrypted bearer token.
	SetWebhookBearer(ctx context.Context, id uuid.UUID, enc []byte) error
	// Apply writes a batch of rows.
	Apply(ctx context.Context, c *Changes) error

	// PutToken inserts or replaces an API token row.
	PutToken(ctx context.Context, t Token) error
	// DeleteToken deletes a token; ErrNotFound if absent.
	DeleteToken(ctx context.Context, hash string) error
	// DeleteTokensByLabel deletes every token with the label and returns
	// how many went.
	DeleteTokensByLabel(ctx context.Context, label string) (int64, error)
	// InsertWebhook stores a new webhook with its encrypted bearer token.
	InsertWebhook(ctx context.Context, w Webhook, enc []byte) error
	// SetWebhookEnabled sets enabled and updated_at; ErrNotFound if absent.
	SetWebhookEnabled(ctx context.Context, id uuid.UUID, enabled bool, atMicros int64) error
	// DeleteWebhook deletes a webhook; ErrNotFound if absent.
	DeleteWebhook(ctx context.Context, id uuid.UUID) error
	// InsertApproval stores a new pending gate.
	InsertApproval(ctx context.Context, a Approval) error
	// DecideApproval records a decision on a pending gate; ErrNotFound if
	// absent, ErrAlreadyDecided if it was decided before.
	DecideApproval(ctx context.Context, gate uuid.UUID, approved bool, reason string, atMicros int64) error
}
