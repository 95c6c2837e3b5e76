package ledger

import (
	"crypto/ed25519"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/enclave"
)

// Status is a session's outcome (docs/design/ledger.md#session-lifecycle).
// Sealing is a separate flag, so a sealed session keeps showing how it ended.
type Status string

// The four session statuses.
const (
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusAborted   Status = "aborted"
)

// Valid reports whether s is one of the four statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusRunning, StatusCompleted, StatusFailed, StatusAborted:
		return true
	}
	return false
}

// Terminal reports whether s is an end state.
func (s Status) Terminal() bool { return s.Valid() && s != StatusRunning }

// InstanceSessionID is the id of the reserved instance session (the nil
// UUID): instance genesis, admin changes, chat outside any session and
// checkpoints. The API shows its events with session_id null.
var InstanceSessionID = uuid.Nil

// Signer values of an event row.
const (
	// SignerSession marks an event signed by the chain's key in force (for
	// the instance chain that is the issuer key).
	SignerSession = "session"
	// SignerIssuer marks an event of a session chain signed by the issuer
	// key instead (recovery, session_sealed, admin_change only).
	SignerIssuer = "issuer"
)

// SessionSpec describes a session to create. Its fields go into the genesis
// event, so they are part of the signed record.
type SessionSpec struct {
	// Goal is trimmed before use; it must not be empty or contain NUL.
	Goal string
	// PolicyHash is the SHA-256 hex of the enforced policy's bytes, or ""
	// when no policy is loaded.
	PolicyHash string
	// TripwireHash is the hash of the effective tripwire config
	// (docs/design/checks.md#tripwire-json).
	TripwireHash string
	// GuardRequired records whether the guard check is mandatory.
	GuardRequired bool
	// LLMBackend and LLMModel name the primary model ("" when none).
	LLMBackend, LLMModel string
	// SandboxTier names the selected sandbox tier.
	SandboxTier string
	// AgentLoop records whether IronVise's own loop drives the session.
	AgentLoop bool
	// CreatedBy is the hash of the API token creating the session (kept in
	// the session row only, for token scopes; "" for none).
	CreatedBy string
	// Network, when set, is the sandbox network of the session's commands,
	// recorded in the genesis so an auditor sees what was allowed.
	Network *SessionNetwork
	// Workspace, when set, is the workspace mode of the session's
	// commands, recorded in the genesis like Network.
	Workspace *SessionWorkspace
	// Enclave, when set, is the attestation of the enclave the session's
	// guard runs in, recorded in the genesis so that a certificate carries
	// it to an offline verifier.
	Enclave *enclave.Attestation
}

// SessionWorkspace is the genesis record of a session's workspace mode
// (docs/ledger.md#workspace-events).
type SessionWorkspace struct {
	// Mode is "ro" (commands cannot write the workspace) or "overlay".
	Mode string `json:"mode"`
	// Path is the workspace directory (the overlay's lower layer), the
	// one ironvise apply writes to.
	Path string `json:"path"`
	// ForbiddenPaths are the policy's forbidden_paths globs.
	ForbiddenPaths []string `json:"forbidden_paths"`
	// NarrowedByPolicy reports that the policy's [workspace] section
	// turned the configured overlay mode off.
	NarrowedByPolicy bool `json:"narrowed_by_policy"`
	// NarrowedBySession reports that the session asked for mode "ro"
	// where the configuration (and its policy) allowed overlay mode.
	NarrowedBySession bool `json:"narrowed_by_session,omitempty"`
}

// SessionNetwork is the genesis record of a session's sandbox network
// (docs/ledger.md#egress-events).
type SessionNetwork struct {
	// Mode is "none" (commands have no network) or "proxy".
	Mode string `json:"mode"`
	// AllowedDomains and AllowCIDRs are the effective allow list in proxy
	// mode: the configured one, narrowed by the policy.
	AllowedDomains []string `json:"allowed_domains"`
	AllowCIDRs     []string `json:"allow_cidrs"`
	// NarrowedByPolicy reports that the policy's [network] section
	// narrowed the configured list or turned the network off.
	NarrowedByPolicy bool `json:"narrowed_by_policy"`
}

// Session is a session row plus its event count.
type Session struct {
	ID uuid.UUID
	// Goal is the trimmed goal; GoalHash its SHA-256 hex.
	Goal     string
	GoalHash string
	// PolicyHash is "" when no policy was loaded.
	PolicyHash string
	Status     Status
	// CreatedAt, FinishedAt and SealedAt are UTC with microsecond
	// precision; zero means not yet.
	CreatedAt  time.Time
	FinishedAt time.Time
	SealedAt   time.Time
	LLMBackend string
	LLMModel   string
	// SandboxTier is the tier recorded at creation.
	SandboxTier string
	// PublicKey is the session's first signing key (seq 0), DID its did:key.
	PublicKey ed25519.PublicKey
	DID       string
	AgentLoop bool
	// OwnerID is the process that holds the lease; LeaseUntil when it
	// lapses (docs/design/ledger.md#session-lifecycle).
	OwnerID    string
	LeaseUntil time.Time
	// EventCount is the number of events in the chain.
	EventCount int64
	// CreatedBy is the hash of the API token that created the session
	// ("" for sessions of the CLI, or created before it was recorded); a
	// token of scope own_sessions reaches only its own
	// (docs/api.md#tokens-and-roles).
	CreatedBy string
	// Denials counts the session's deny verdicts; it is filled only by a
	// listing with SessionFilter.WithDenials.
	Denials int64
}

// Sealed reports whether the session's chain is closed.
func (s *Session) Sealed() bool { return !s.SealedAt.IsZero() }

// Event is one stored ledger event.
type Event struct {
	// LogIndex is the event's leaf index in the instance-wide Merkle log.
	LogIndex  int64
	SessionID uuid.UUID
	Seq       uint64
	Type      string
	// Payload is the exact canonical JSON that was hashed; it is stored and
	// returned byte for byte, never re-serialised.
	Payload []byte
	// CreatedMicros is the creation time in Unix microseconds.
	CreatedMicros int64
	PrevHash      Hash
	Hash          Hash
	Signature     []byte
	// KeyID names the key that signed (see [KeyID]); Signer says whether it
	// is the chain's own key or the issuer key.
	KeyID  string
	Signer string
	// PublicKey is the verifying key named by KeyID, filled on read.
	PublicKey ed25519.PublicKey
}

// ID returns the API event id: the log index plus one
// (docs/design/api.md#event-shape).
func (e *Event) ID() int64 { return e.LogIndex + 1 }

// CreatedAt returns the creation time (UTC, microsecond precision).
func (e *Event) CreatedAt() time.Time { return time.UnixMicro(e.CreatedMicros).UTC() }

// Checkpoint is a signed tree head of the Merkle log in the C2SP
// signed-note format (docs/design/ledger.md#merkle-log).
type Checkpoint struct {
	TreeSize int64
	Root     Hash
	// CreatedMicros is when it was written (Unix microseconds); the
	// checkpoint event records it in the signed instance chain.
	CreatedMicros int64
	// KeyID is the note key hash of the issuer key, as 8 hex digits.
	KeyID string
	// PublicKey is the issuer public key that signed.
	PublicKey ed25519.PublicKey
	// Signature is the Ed25519 signature of the note body.
	Signature []byte
	// Note is the complete signed note (body and signature line).
	Note []byte
	// EventLogIndex is the log index of the checkpoint event that records
	// this checkpoint on the instance chain.
	EventLogIndex int64
}

// CreatedAt returns the creation time (UTC).
func (c *Checkpoint) CreatedAt() time.Time { return time.UnixMicro(c.CreatedMicros).UTC() }

// KeyRecord is one row of the key table: a public key valid for a chain
// from ValidFromSeq until the next row's ValidFromSeq. Session keys also
// carry their private half encrypted under a KEK.
type KeyRecord struct {
	SessionID    uuid.UUID
	ValidFromSeq uint64
	KeyID        string
	PublicKey    ed25519.PublicKey
	// EncryptedPrivate is nonce ‖ AES-256-GCM(seed); nil for the issuer key.
	EncryptedPrivate []byte
	// KEK names the key-encryption key: "issuer" or "passphrase".
	KEK           string
	CreatedMicros int64
}

// InclusionProof proves that an event's leaf is in a checkpointed tree.
type InclusionProof struct {
	LogIndex  int64
	EventHash Hash
	// LeafHash is the RFC 6962 leaf hash H(0x00 ‖ event hash).
	LeafHash Hash
	TreeSize int64
	Root     Hash
	// Path is the audit path, leaf to root (RFC 6962 order).
	Path       []Hash
	Checkpoint Checkpoint
}

// ConsistencyProof proves that the tree of OldSize is a prefix of the tree
// of NewSize.
type ConsistencyProof struct {
	OldSize, NewSize int64
	OldRoot, NewRoot Hash
	Path             []Hash
}

// SessionFilter selects sessions for listing
// (docs/design/api.md#session-listing).
type SessionFilter struct {
	// Status filters by exact status; "" means any.
	Status Status
	// Limit bounds the rows (0 means 100); Offset skips rows.
	Limit, Offset int
	// CreatedBy, when set, keeps the sessions created by that token hash.
	CreatedBy string
	// WithDenials fills Session.Denials (one count per listed session).
	WithDenials bool
}

// Token is an API token row: only the SHA-256 of the token is stored.
type Token struct {
	// Hash is the lowercase hex SHA-256 of the token.
	Hash  string
	Role  string
	Label string
	// CreatedAt is set on insert; ExpiresAt is zero for no expiry.
	CreatedAt time.Time
	ExpiresAt time.Time
	// Scope is ScopeAll ("" is read as it) or ScopeOwnSessions.
	Scope string
}

// Token scopes (docs/api.md#tokens-and-roles).
const (
	// ScopeAll lets a token reach every session its role allows.
	ScopeAll = "all"
	// ScopeOwnSessions limits a token to the sessions it created.
	ScopeOwnSessions = "own_sessions"
)

// Webhook is an API-registered webhook
// (docs/design/api.md#token-webhook-shapes).
type Webhook struct {
	ID          uuid.UUID
	Label       string
	URL         string
	SIEMFormat  string
	FilterKinds []string
	Enabled     bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// BearerToken is stored encrypted under the KEK and never serialised.
	BearerToken string `json:"-"`
}

// Approval is a pending or decided approval gate
// (docs/design/api.md#tokens-webhooks-policies).
type Approval struct {
	GateID              uuid.UUID
	SessionID           uuid.UUID
	ActionName          string
	ActionParamsSummary string
	CreatedAt           time.Time
	// DecidedAt is zero while the gate is pending.
	DecidedAt time.Time
	Approved  bool
	Reason    string
}

// fromMicros converts Unix microseconds to UTC time, 0 to the zero time.
func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}
