package ledger

import (
	"errors"
	"fmt"
)

// Sentinel errors. Compare with errors.Is; the wrapped text adds the session,
// sequence or value concerned.
var (
	// ErrNotFound reports an unknown session, event, checkpoint, token,
	// webhook or approval.
	ErrNotFound = errors.New("ironvise/ledger: not found")
	// ErrSealed reports a write to a sealed session; a sealed chain is closed
	// for good (docs/design/ledger.md#session-lifecycle).
	ErrSealed = errors.New("ironvise/ledger: session is sealed")
	// ErrNotRunning reports a lifecycle change that needs a running session.
	ErrNotRunning = errors.New("ironvise/ledger: session is not running")
	// ErrGoalMismatch reports that a session's stored goal hash no longer
	// matches the goal of its genesis event; the session has been aborted.
	ErrGoalMismatch = errors.New("ironvise/ledger: goal anchoring failed")
	// ErrReservedType reports an Append of an event type only the ledger
	// itself writes (genesis, key_rotation, checkpoint, session_sealed,
	// recovery).
	ErrReservedType = errors.New("ironvise/ledger: reserved event type")
	// ErrInvalidPayload reports a payload that is not a JSON object, is not
	// valid I-JSON, or carries a "type" other than the event type.
	ErrInvalidPayload = errors.New("ironvise/ledger: invalid payload")
	// ErrInvalidType reports an event type name outside [a-z0-9_], empty or
	// longer than 64 bytes.
	ErrInvalidType = errors.New("ironvise/ledger: invalid event type")
	// ErrKeyUnavailable reports that the session's private key cannot be
	// decrypted by this process (different ECTO_KEY_PASSPHRASE or issuer
	// key), so it cannot sign for the session.
	ErrKeyUnavailable = errors.New("ironvise/ledger: session key unavailable")
	// ErrIssuerMismatch reports a data-dir issuer key that differs from the
	// one the ledger was created with.
	ErrIssuerMismatch = errors.New("ironvise/ledger: issuer key does not match the ledger")
	// ErrRolledBack reports a database whose log is older than, or not an
	// extension of, the checkpoint this instance remembers beside its keys
	// (restored from an older copy, or a fork).
	ErrRolledBack = errors.New("ironvise/ledger: the database is older than the last checkpoint this instance signed")
	// ErrPassphrase reports an ECTO_KEY_PASSPHRASE that does not open the
	// keys the ledger holds.
	ErrPassphrase = errors.New("ironvise/ledger: wrong key passphrase")
	// ErrPassphraseRequired reports a ledger whose session keys are
	// protected by a passphrase, opened without one.
	ErrPassphraseRequired = errors.New("ironvise/ledger: key passphrase required")
	// ErrNotCovered reports a proof request for an event that no checkpoint
	// covers yet; retry after the next checkpoint.
	ErrNotCovered = errors.New("ironvise/ledger: not yet covered by a checkpoint")
	// ErrAlreadyDecided reports a second decision on an approval gate.
	ErrAlreadyDecided = errors.New("ironvise/ledger: approval already decided")
	// ErrClosed reports use of a closed ledger.
	ErrClosed = errors.New("ironvise/ledger: ledger is closed")
	// ErrSchema reports a database whose schema is newer than this build.
	ErrSchema = errors.New("ironvise/ledger: unsupported schema version")
	// ErrTampered reports that startup verification found the stored
	// ledger inconsistent with its hashes, signatures or checkpoints.
	ErrTampered = errors.New("ironvise/ledger: ledger failed verification")
)

// bug marks an invariant violation that cannot happen unless the code is
// wrong, so such failures can be searched for and alerted on.
func bug(err error) error {
	return fmt.Errorf("ironvise/ledger: internal error (bug): %w", err)
}
