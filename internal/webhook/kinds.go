package webhook

import (
	"encoding/json"

	"github.com/ironvise/ironvise/internal/ledger"
)

// The kinds of event a webhook receives (docs/design/ledger.md#siem-egress,
// docs/design/api.md#webhook-delivery).
const (
	// KindGuardDenial is a deny verdict of the guard check.
	KindGuardDenial = "guard_denial"
	// KindTripwireRejection is a deny verdict of the tripwire check.
	KindTripwireRejection = "tripwire_rejection"
	// KindPolicyDenial is a deny verdict of the schema, policy or approval
	// check.
	KindPolicyDenial = "policy_denial"
	// KindEgressDenial is an egress event with verdict deny: a sandboxed
	// command tried to reach a host or address off the allow list (or
	// was cut by a cap of the proxy). Allowed connections are in the
	// ledger and the reports, not sent.
	KindEgressDenial = "egress_denial"
	// KindSandboxAborted is a sandbox_result with status aborted: the
	// tier could not be applied and the command did not run.
	KindSandboxAborted = "sandbox_aborted"
	// KindSessionAborted is a session that reached status aborted (its
	// seal event records the outcome).
	KindSessionAborted = "session_aborted"
	// KindObservation is an observation event.
	KindObservation = "observation"
	// KindCheckpoint is a signed checkpoint of the log (its record on the
	// instance chain): sent so that a copy of every tree head lives
	// outside the operator's database, where a rollback or a fork shows.
	KindCheckpoint = "checkpoint"
)

// DefaultKinds are what WEBHOOK_URL and a webhook created without
// filter_kinds receive.
var DefaultKinds = []string{KindGuardDenial, KindTripwireRejection, KindEgressDenial, KindSandboxAborted, KindSessionAborted, KindCheckpoint}

// Kinds lists every kind a webhook may filter on.
var Kinds = []string{KindObservation, KindGuardDenial, KindTripwireRejection, KindPolicyDenial, KindEgressDenial, KindSandboxAborted, KindSessionAborted, KindCheckpoint}

// ValidKind reports whether k is one of Kinds.
func ValidKind(k string) bool {
	for _, v := range Kinds {
		if v == k {
			return true
		}
	}
	return false
}

// Classify returns the webhook kind of a committed ledger event, or ""
// when no webhook kind applies.
func Classify(ev *ledger.Event) string {
	switch ev.Type {
	case ledger.TypeObservation:
		return KindObservation
	case ledger.TypeCheckVerdict:
		var v struct {
			Check    string `json:"check"`
			Decision string `json:"decision"`
		}
		if json.Unmarshal(ev.Payload, &v) != nil || v.Decision != "deny" {
			return ""
		}
		switch v.Check {
		case "guard":
			return KindGuardDenial
		case "tripwire":
			return KindTripwireRejection
		case "schema", "policy", "approval":
			return KindPolicyDenial
		}
	case ledger.TypeEgress:
		var v struct {
			Verdict string `json:"verdict"`
		}
		if json.Unmarshal(ev.Payload, &v) == nil && v.Verdict == "deny" {
			return KindEgressDenial
		}
	case ledger.TypeSandboxResult:
		var v struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(ev.Payload, &v) == nil && v.Status == "aborted" {
			return KindSandboxAborted
		}
	case ledger.TypeCheckpoint:
		if ev.SessionID == ledger.InstanceSessionID {
			return KindCheckpoint
		}
	case ledger.TypeSessionSealed:
		var v struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(ev.Payload, &v) == nil && v.Status == string(ledger.StatusAborted) {
			return KindSessionAborted
		}
	}
	return ""
}

// severity is the SIEM severity of a kind on CEF's 0–10 scale (LEEF uses
// the same numbers, 1–10).
func severity(kind string) int {
	switch kind {
	case KindTripwireRejection:
		return 8
	case KindGuardDenial, KindEgressDenial:
		// An egress denial is a command that got past every check and
		// then reached for a host off the list: a possible exfiltration.
		return 7
	case KindSandboxAborted, KindSessionAborted:
		return 6
	case KindPolicyDenial:
		return 5
	}
	return 3
}
