package ledger

import (
	"encoding/hex"
	"time"
)

// SessionJSON is a session in its wire shape
// (docs/design/api.md#session-shape): the API's Session object, which
// `ironvise sessions --json` prints too. Every key is always present; absent
// values are null.
type SessionJSON struct {
	ID                     string  `json:"id"`
	Goal                   string  `json:"goal"`
	GoalHash               string  `json:"goal_hash"`
	Status                 string  `json:"status"`
	LLMBackend             *string `json:"llm_backend"`
	LLMModel               *string `json:"llm_model"`
	CreatedAt              string  `json:"created_at"`
	FinishedAt             *string `json:"finished_at"`
	PolicyHash             *string `json:"policy_hash"`
	SessionPublicKey       string  `json:"session_public_key"`
	SessionDID             string  `json:"session_did"`
	EnclaveAttestationJSON *string `json:"enclave_attestation_json"`
	Sealed                 bool    `json:"sealed"`
	SealedAt               *string `json:"sealed_at"`
	EventCount             int64   `json:"event_count"`
	AgentLoop              bool    `json:"agent_loop"`
	SandboxTier            string  `json:"sandbox_tier"`
	// Denials counts the session's deny verdicts; only session listings
	// (SessionFilter.WithDenials) carry it.
	Denials *int64 `json:"denials,omitempty"`
}

// JSON returns the session's wire shape.
func (s *Session) JSON() SessionJSON {
	return SessionJSON{
		ID: s.ID.String(), Goal: s.Goal, GoalHash: s.GoalHash, Status: string(s.Status),
		LLMBackend: nullString(s.LLMBackend), LLMModel: nullString(s.LLMModel), CreatedAt: FormatTime(s.CreatedAt),
		FinishedAt: nullTime(s.FinishedAt), PolicyHash: nullString(s.PolicyHash), SessionPublicKey: hex.EncodeToString(s.PublicKey),
		SessionDID: s.DID, Sealed: s.Sealed(), SealedAt: nullTime(s.SealedAt), EventCount: s.EventCount, AgentLoop: s.AgentLoop,
		SandboxTier: s.SandboxTier,
	}
}

// FormatTime renders t in TimeFormat (UTC, six fractional digits).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := FormatTime(t)
	return &s
}
