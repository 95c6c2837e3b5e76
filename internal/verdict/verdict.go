// Package verdict holds the verdict model and the reason codes that every
// IronVise check produces.
//
// It is a leaf package so that the checks (intent, policy, tripwire, scan,
// guard) and the pipeline that runs them (check) share one vocabulary without
// importing each other.
//
// # Model
//
// A check returns one [Verdict]: which check decided, the [Decision], a stable
// machine-readable [Code] from docs/design/checks.md#reason-codes and a human
// message. Denials never carry internal error details beyond what the message
// states; the message is what the agent and the operator see.
//
//	v := verdict.Denial(verdict.CheckTripwire, verdict.CmdBannedProgram, `program "sudo" is banned`)
//	if v.Denied() { ... }
//
// # Limitations
//
// Codes are plain strings on the wire; an unknown code read back from a
// ledger is kept as-is rather than rejected, so older events stay readable.
package verdict

import "slices"

// Check names the check that produced a verdict
// (docs/design/checks.md#check-order).
type Check string

// The checks, in pipeline order.
const (
	CheckPromptScan Check = "prompt_scan"
	CheckSchema     Check = "schema"
	CheckPolicy     Check = "policy"
	CheckTripwire   Check = "tripwire"
	CheckApproval   Check = "approval"
	CheckGuard      Check = "guard"
)

// Decision is the outcome of one check.
type Decision string

// The decisions of docs/design/checks.md#check-order.
const (
	Allow           Decision = "allow"
	Deny            Decision = "deny"
	RequireApproval Decision = "require_approval" // policy only
	Flag            Decision = "flag"             // prompt scan only
	Skip            Decision = "skip"             // guard disabled
)

// Rank orders decisions by restrictiveness for the policy precedence of
// docs/design/checks.md#policy-precedence: deny > require_approval > allow.
func (d Decision) Rank() int {
	switch d {
	case Deny:
		return 2
	case RequireApproval:
		return 1
	default:
		return 0
	}
}

// Phase says whether a verdict was reached before execution or during it
// (redirect hops of http_get are re-checked at execute time).
type Phase string

// The phases of docs/design/checks.md#check-events.
const (
	PhasePre     Phase = "pre"
	PhaseExecute Phase = "execute"
)

// Verdict is the result of one check. It is the payload of a check_verdict
// ledger event without the step and timing fields, which the caller adds.
type Verdict struct {
	Check    Check    `json:"check"`
	Phase    Phase    `json:"phase"`
	Decision Decision `json:"decision"`
	Code     Code     `json:"code"`
	Message  string   `json:"message"`
	Rule     string   `json:"rule,omitempty"`
	Flags    []string `json:"flags,omitempty"`
	Gates    []string `json:"gates,omitempty"`
}

// MaxMessageBytes caps a verdict message (docs/design/checks.md#check-events:
// message ≤ 1 KiB).
const MaxMessageBytes = 1024

// New builds a verdict, capping the message at MaxMessageBytes without
// splitting a UTF-8 sequence.
func New(c Check, d Decision, code Code, msg string) Verdict {
	return Verdict{Check: c, Phase: PhasePre, Decision: d, Code: code, Message: capMessage(msg)}
}

// Denial builds a deny verdict.
func Denial(c Check, code Code, msg string) Verdict { return New(c, Deny, code, msg) }

// Pass builds the plain allow verdict (code ok, message ok).
func Pass(c Check) Verdict { return New(c, Allow, OK, "ok") }

// Denied reports whether the verdict stops the intent. A check that cannot
// decide must return Deny; anything other than allow, flag, skip and
// require_approval is treated as a denial (fail closed).
func (v Verdict) Denied() bool {
	switch v.Decision {
	case Allow, Flag, Skip, RequireApproval:
		return false
	default:
		return true
	}
}

// WithRule returns a copy of v naming the deciding rule.
func (v Verdict) WithRule(id string) Verdict { v.Rule = id; return v }

// WithFlags returns a copy of v carrying the given flags, sorted and unique.
func (v Verdict) WithFlags(flags ...string) Verdict {
	all := append(slices.Clone(v.Flags), flags...)
	slices.Sort(all)
	v.Flags = slices.Compact(all)
	if len(v.Flags) == 0 {
		v.Flags = nil
	}
	return v
}

func capMessage(s string) string {
	if len(s) <= MaxMessageBytes {
		return s
	}
	cut := MaxMessageBytes
	// Back up to a rune start so the message stays valid UTF-8.
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}
