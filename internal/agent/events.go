package agent

import (
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Payloads of the events the agent writes
// (docs/design/checks.md#check-events, docs/design/api.md#event-payloads,
// docs/design/agent.md#agent-loop). Field names are wire names read by SDK
// clients and the dashboard; never rename them.

// MaxRawRecorded caps intent_proposed.raw
// (docs/design/checks.md#check-events: ≤ 16 KiB).
const MaxRawRecorded = 16 << 10

type intentProposedEvent struct {
	Step         int    `json:"step"`
	Raw          string `json:"raw"`
	RawTruncated bool   `json:"raw_truncated"`
	RawSHA256    string `json:"raw_sha256"`
	Intent       any    `json:"intent"`
	IntentID     string `json:"intent_id"`
	Source       string `json:"source"`
	// LLM is an IronVise addition: which model produced the reply and
	// the tokens it used (omitted for intents submitted through the API).
	LLM *LLMCall `json:"llm,omitempty"`
}

type checkVerdictEvent struct {
	Step       int              `json:"step"`
	Check      verdict.Check    `json:"check"`
	Phase      verdict.Phase    `json:"phase"`
	Decision   verdict.Decision `json:"decision"`
	Code       verdict.Code     `json:"code"`
	Message    string           `json:"message"`
	Rule       string           `json:"rule,omitempty"`
	Flags      []string         `json:"flags,omitempty"`
	Gates      []string         `json:"gates,omitempty"`
	DurationUS int64            `json:"duration_us"`
	IntentID   *string          `json:"intent_id"`
}

type actionEvent struct {
	Step      int    `json:"step"`
	IntentSeq uint64 `json:"intent_seq"`
	// IntentID binds the commit to its sandbox_result (ledger origin.go).
	IntentID string         `json:"intent_id"`
	Name     string         `json:"name"`
	Params   map[string]any `json:"params"`
	// ExecutedBy is "agent" for a delegated step (delegated.go): the
	// agent, not IronVise, runs the action, so nothing observed of it is
	// evidence of an IronVise run (ledger.ExecutedObservation) and it is
	// not counted as executed (evidence.ActionExecuted).
	ExecutedBy string `json:"executed_by,omitempty"`
}

type observationEvent struct {
	Step      int    `json:"step"`
	ActionSeq uint64 `json:"action_seq"`
	// Content is the observation with credentials replaced by
	// placeholders and nothing else changed (an injection attempt stays,
	// as evidence); Spans locate the scanner's hits in it, and the fenced
	// ones are what the model read as [WITHHELD:…] (scan.ModelView).
	Content    string      `json:"content"`
	Labels     []string    `json:"labels"`
	Truncated  bool        `json:"truncated"`
	Suspicious bool        `json:"suspicious"`
	RawSHA256  string      `json:"raw_sha256"`
	Spans      []scan.Span `json:"spans"`
	// Secrets counts the credential placeholders in Content.
	Secrets int `json:"secrets"`

	// SandboxResultSeq names the sandbox_result of a run_command's run, so
	// the observation is bound to the run it reports (ledger origin.go).
	SandboxResultSeq *uint64 `json:"sandbox_result_seq,omitempty"`
}

type sessionHaltedEvent struct {
	Step    int    `json:"step"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Count   int    `json:"count"`
}

type circuitBreakerEvent struct {
	Step                int    `json:"step"`
	Reason              string `json:"reason"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
}

type schemaErrorEvent struct {
	Step        int    `json:"step"`
	Message     string `json:"message"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"max_attempts"`
	Raw         string `json:"raw"`
}

type thoughtEvent struct {
	Content string `json:"content"`
}

type snapshotEvent struct {
	Step        int    `json:"step"`
	StateSHA256 string `json:"state_sha256"`
	State       any    `json:"state"`
}
