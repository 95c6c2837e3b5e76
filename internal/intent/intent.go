// Package intent is the strict model of what an agent may propose, and its
// parser: check 1 of the pipeline, the schema check
// (docs/design/checks.md#intent-model, docs/design/checks.md#schema-check).
//
// # Why strict
//
// The model's reply is untrusted text. Anything the parser tolerates — an
// extra key, a case-folded key, a duplicate key where the last one wins, a
// trailing second object — is a place where what a later check inspects and
// what the executor runs can disagree. So the parser walks the JSON token
// stream itself (encoding/json's struct decoding matches keys
// case-insensitively and lets duplicates overwrite) and accepts exactly one
// shape per action.
//
// # Usage
//
//	in, err := intent.Parse(raw, intent.Options{MinJustification: 5, Observations: src})
//	if err != nil {
//		var se *intent.Error // carries the reason code and "<json path>: <problem>"
//		errors.As(err, &se)
//	}
//
// # Limitations
//
// Findings evidence (step 9) needs the session's observations, which come
// through the [Observations] interface; with none, every cited sequence is
// unverified and the intent is denied.
package intent

import (
	"encoding/json"
	"slices"
	"strings"
)

// Action is one of the closed actions.
type Action string

// The actions of docs/design/checks.md#intent-model. The set is closed.
const (
	RunCommand Action = "run_command"
	ReadFile   Action = "read_file"
	HTTPGet    Action = "http_get"
	Complete   Action = "complete"
	// WriteFile is a file write or edit that an agent proposes and runs
	// itself once allowed (an agent hook's Write, Edit or apply_patch).
	// IronVise never executes it: its sessions' workspaces are read-only
	// in the sandbox, so a session that executes its intents refuses it
	// (Options.NoWrite).
	WriteFile Action = "write_file"
)

// Actions lists the actions in their documented order.
var Actions = []Action{RunCommand, ReadFile, HTTPGet, Complete, WriteFile}

// Known reports whether a is one of the actions.
func (a Action) Known() bool { return slices.Contains(Actions, a) }

// Severity of a finding.
type Severity string

// The severities, least to most severe.
const (
	Low      Severity = "low"
	Medium   Severity = "medium"
	High     Severity = "high"
	Critical Severity = "critical"
)

// NeedsEvidence reports whether findings of this severity must cite
// observations (docs/design/checks.md#intent-model: high and critical).
func (s Severity) NeedsEvidence() bool { return s == High || s == Critical }

// Limits of docs/design/checks.md#intent-model. Each is tested at its
// boundary.
const (
	MaxRawBytes            = 64 << 10 // raw model text
	MaxDepth               = 32       // JSON nesting
	MaxJustificationRunes  = 2000
	DefaultMinJustify      = 5
	MaxReasoningBytes      = 16 << 10
	MaxCommandBytes        = 16 << 10
	MaxPathBytes           = 4096
	MaxURLBytes            = 2048
	MaxFindings            = 100
	MaxTitleRunes          = 200
	MaxEvidenceRunes       = 4000
	MaxRecommendationRunes = 4000
	MaxEvidenceRefs        = 20
	MaxQuoteRunes          = 1000
	// MaxContentBytes bounds write_file's content_bytes: what a write may
	// claim to put in a file (1 GiB), so that the number stays exact in
	// every JSON reader.
	MaxContentBytes = 1 << 30
)

// Intent is one parsed, schema-valid proposal.
type Intent struct {
	Action   Action
	Command  string    // run_command
	Path     string    // read_file, write_file
	URL      string    // http_get
	Findings []Finding // complete
	// Write describes write_file's content without holding it: the
	// content never enters an intent, so no record can leak it.
	Write         *WriteInfo
	Justification string
	Reasoning     string
}

// WriteInfo is what write_file records of the content written: its
// SHA-256 (lowercase hex) and size, each optional.
type WriteInfo struct {
	SHA256 string
	Bytes  *int64
}

// Finding is one result reported with the complete action.
type Finding struct {
	Severity         Severity `json:"severity"`
	Title            string   `json:"title"`
	Evidence         string   `json:"evidence"`
	Recommendation   string   `json:"recommendation"`
	EvidenceSequence []int64  `json:"evidence_sequence"`
	EvidenceQuotes   []string `json:"evidence_quotes"`
}

// Params returns the action's parameters as the JSON object they were given
// as (defaults filled in), for the ledger's action event and the guard.
func (in *Intent) Params() map[string]any {
	switch in.Action {
	case RunCommand:
		return map[string]any{"command": in.Command}
	case ReadFile:
		return map[string]any{"path": in.Path}
	case WriteFile:
		m := map[string]any{"path": in.Path}
		if w := in.Write; w != nil {
			if w.SHA256 != "" {
				m["content_sha256"] = w.SHA256
			}
			if w.Bytes != nil {
				m["content_bytes"] = *w.Bytes
			}
		}
		return m
	case HTTPGet:
		return map[string]any{"url": in.URL}
	case Complete:
		fs := in.Findings
		if fs == nil {
			fs = []Finding{}
		}
		return map[string]any{"findings": fs}
	}
	return map[string]any{}
}

// Target returns the one string the action operates on (command, path or
// URL), or "" for complete. Useful for summaries.
func (in *Intent) Target() string {
	switch in.Action {
	case RunCommand:
		return in.Command
	case ReadFile, WriteFile:
		return in.Path
	case HTTPGet:
		return in.URL
	}
	return ""
}

// MarshalJSON implements json.Marshaler with the wire shape of
// docs/design/checks.md#intent-model.
func (in Intent) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Action        Action         `json:"action"`
		Params        map[string]any `json:"params"`
		Justification string         `json:"justification"`
		Reasoning     string         `json:"reasoning"`
	}{in.Action, in.Params(), in.Justification, in.Reasoning})
}

// MarshalJSON implements json.Marshaler, writing empty arrays rather than
// null so the stored form matches the documented defaults.
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding
	p := plain(f)
	if p.EvidenceSequence == nil {
		p.EvidenceSequence = []int64{}
	}
	if p.EvidenceQuotes == nil {
		p.EvidenceQuotes = []string{}
	}
	return json.Marshal(p)
}

// StripFence trims the model text and removes one surrounding markdown code
// fence: a first line starting with three backticks and a final line that is
// exactly three backticks (docs/design/checks.md#intent-model). Nothing else
// is stripped, so prose around the object stays and fails the schema check.
func StripFence(raw string) string {
	s := strings.TrimSpace(raw)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return ""
	}
	s = s[nl+1:]
	last := strings.LastIndexByte(s, '\n')
	if strings.TrimRight(s[last+1:], "\r") == "```" {
		if last < 0 {
			return ""
		}
		s = s[:last]
	}
	return s
}
