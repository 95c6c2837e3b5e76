package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/ironvise/ironvise/internal/ledger"
)

// The API objects of docs/design/api.md#verify-and-evidence that come from
// this package: Compliance, VC and VcVerify. The server serialises them as
// they are.

// ComplianceReport is the API's Compliance object.
type ComplianceReport struct {
	SessionID   string            `json:"session_id"`
	EventCount  int               `json:"event_count"`
	PolicyHash  *string           `json:"policy_hash"`
	GeneratedAt string            `json:"generated_at"`
	Sealed      bool              `json:"sealed"`
	TipHash     string            `json:"tip_hash"`
	Events      []ComplianceEvent `json:"events"`
	Checkpoint  CheckpointInfo    `json:"checkpoint"`
}

// ComplianceEvent is one event of a Compliance object; PayloadHash repeats
// ContentHash (the SDK types read that name).
type ComplianceEvent struct {
	Sequence    uint64 `json:"sequence"`
	Type        string `json:"type"`
	ContentHash string `json:"content_hash"`
	PayloadHash string `json:"payload_hash"`
}

// CheckpointInfo is the API's Checkpoint object
// (docs/design/api.md#checkpoints).
type CheckpointInfo struct {
	TreeSize  int64  `json:"tree_size"`
	RootHash  string `json:"root_hash"`
	Timestamp string `json:"timestamp"`
	KeyID     string `json:"key_id"`
	PublicKey string `json:"public_key"`
	Signature string `json:"signature"`
	// EventID is the API id of the checkpoint event (log index + 1).
	EventID *int64 `json:"event_id"`
}

// NewCheckpointInfo converts a ledger checkpoint to its API form.
func NewCheckpointInfo(cp *ledger.Checkpoint) CheckpointInfo {
	c := CheckpointInfo{
		TreeSize: cp.TreeSize, RootHash: cp.Root.String(), Timestamp: formatTime(cp.CreatedAt()), KeyID: cp.KeyID,
		PublicKey: hex.EncodeToString(cp.PublicKey), Signature: hex.EncodeToString(cp.Signature),
	}
	// The checkpoint event is written in the same commit as the
	// checkpoint; its log index is recorded with it.
	if cp.EventLogIndex >= 0 && cp.TreeSize > 0 {
		id := cp.EventLogIndex + 1
		c.EventID = &id
	}
	return c
}

// Compliance returns session id's Compliance object: every event's hash
// and the newest checkpoint. An unknown session is ledger.ErrNotFound.
func Compliance(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (*ComplianceReport, error) {
	s, err := l.Session(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("evidence: compliance: %w", err)
	}
	evs, err := l.Events(ctx, id, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("evidence: compliance: %w", err)
	}
	cp, err := l.LatestCheckpoint(ctx)
	if err != nil {
		return nil, fmt.Errorf("evidence: compliance: %w", err)
	}
	c := &ComplianceReport{
		SessionID: id.String(), EventCount: len(evs), PolicyHash: nonEmpty(s.PolicyHash), GeneratedAt: formatTime(time.Now()),
		Sealed: s.Sealed(), Events: make([]ComplianceEvent, len(evs)), Checkpoint: NewCheckpointInfo(&cp),
	}
	for i := range evs {
		h := evs[i].Hash.String()
		c.Events[i] = ComplianceEvent{Sequence: evs[i].Seq, Type: evs[i].Type, ContentHash: h, PayloadHash: h}
		c.TipHash = h
	}
	return c, nil
}

// VC is the API's VC object for a session's newest credential.
type VC struct {
	VCJWT string `json:"vc_jwt"`
	// VCPayload is the decoded JWT claims, or null when they are not a
	// JSON object.
	VCPayload json.RawMessage `json:"vc_payload"`
	// MerkleRoot is the RFC 6962 root over the session's event hashes.
	MerkleRoot string  `json:"merkle_root"`
	EventCount int     `json:"event_count"`
	PolicyHash *string `json:"policy_hash"`
	// Proof reports that the JWT carries a signature.
	Proof bool `json:"proof"`
}

// SessionVC returns the newest credential of session id. A session
// without one is ErrNoCredential; an unknown session ledger.ErrNotFound.
func SessionVC(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (*VC, error) {
	s, err := l.Session(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("evidence: credential: %w", err)
	}
	evs, err := l.Events(ctx, id, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("evidence: credential: %w", err)
	}
	jwt, ok := latestVC(evs)
	if !ok {
		return nil, fmt.Errorf("evidence: session %s: %w", id, ErrNoCredential)
	}
	v := &VC{VCJWT: jwt, VCPayload: json.RawMessage("null"), EventCount: len(evs), PolicyHash: nonEmpty(s.PolicyHash)}
	if parts := strings.Split(jwt, "."); len(parts) == 3 {
		if pb, err := unb64(parts[1]); err == nil {
			var obj map[string]json.RawMessage
			if json.Unmarshal(pb, &obj) == nil && obj != nil {
				v.VCPayload = pb
			}
		}
		v.Proof = parts[2] != ""
	}
	hashes := make([]ledger.Hash, len(evs))
	for i := range evs {
		hashes[i] = evs[i].Hash
	}
	v.MerkleRoot = MerkleRoot(hashes).String()
	return v, nil
}

// latestVC returns the vc_jwt of the newest verifiable_credential event.
func latestVC(evs []ledger.Event) (string, bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type != ledger.TypeVerifiableCredential {
			continue
		}
		var p vcPayload
		if json.Unmarshal(evs[i].Payload, &p) == nil {
			return p.VCJWT, true
		}
	}
	return "", false
}

// VCVerification is the API's VcVerify object.
type VCVerification struct {
	Valid             bool
	SignatureVerified bool
	VCJWT             string
	VCPayload         json.RawMessage
	Reason            string
}

// MarshalJSON implements json.Marshaler with the two shapes of
// docs/design/api.md#verify-and-evidence:
// {"valid":true,"signature_verified":true,"vc_jwt","vc_payload"} or
// {"valid":false,"reason"}.
func (v VCVerification) MarshalJSON() ([]byte, error) {
	if v.Valid {
		return json.Marshal(struct {
			Valid             bool            `json:"valid"`
			SignatureVerified bool            `json:"signature_verified"`
			VCJWT             string          `json:"vc_jwt"`
			VCPayload         json.RawMessage `json:"vc_payload"`
		}{true, v.SignatureVerified, v.VCJWT, v.VCPayload})
	}
	return json.Marshal(struct {
		Valid  bool   `json:"valid"`
		Reason string `json:"reason"`
	}{false, v.Reason})
}

// VerifySessionVC verifies the newest credential of session id against
// this ledger's issuer key and that it is about this session. The error is
// for a missing session (ledger.ErrNotFound) or credential
// (ErrNoCredential), and for failures to read the ledger; a credential
// that fails verification is a result with Valid false.
func VerifySessionVC(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (*VCVerification, error) {
	v, err := SessionVC(ctx, l, id)
	if err != nil {
		return nil, err
	}
	c, err := VerifyVC(v.VCJWT, l.IssuerPublicKey())
	if err != nil {
		return &VCVerification{Reason: strings.TrimPrefix(err.Error(), ErrInvalidCredential.Error()+": ")}, nil
	}
	if c.Subject != id.String() {
		return &VCVerification{Reason: fmt.Sprintf("the credential is about session %s, not %s", c.Subject, id)}, nil
	}
	// A well-signed credential of a session whose findings cite a
	// client's own observations (issued before that was refused) vouches
	// for nothing.
	if err := checkSessionFindings(ctx, l, id); errors.Is(err, ErrUnbackedFindings) {
		return &VCVerification{Reason: strings.TrimPrefix(err.Error(), ErrUnbackedFindings.Error()+": ") + ": the session's findings are not backed by observations IronVise recorded from executed actions"}, nil
	} else if err != nil {
		return nil, err
	}
	return &VCVerification{Valid: true, SignatureVerified: true, VCJWT: v.VCJWT, VCPayload: v.VCPayload}, nil
}

// MerkleRoot returns the RFC 6962 Merkle tree hash over event hashes as
// leaves (the empty tree hashes to SHA-256 of nothing).
func MerkleRoot(hashes []ledger.Hash) ledger.Hash {
	if len(hashes) == 0 {
		return ledger.Hash(sha256.Sum256(nil))
	}
	// Fold complete subtrees like a binary counter; the right edge joins
	// from the right, which is RFC 6962's split at the largest power of
	// two.
	var stack []tlog.Hash
	var sizes []int
	for _, h := range hashes {
		stack = append(stack, tlog.RecordHash(h[:]))
		sizes = append(sizes, 1)
		for len(sizes) >= 2 && sizes[len(sizes)-1] == sizes[len(sizes)-2] {
			n := len(stack)
			stack = append(stack[:n-2], tlog.NodeHash(stack[n-2], stack[n-1]))
			sizes = append(sizes[:n-2], sizes[n-2]*2)
		}
	}
	root := stack[len(stack)-1]
	for i := len(stack) - 2; i >= 0; i-- {
		root = tlog.NodeHash(stack[i], root)
	}
	return ledger.Hash(root)
}
