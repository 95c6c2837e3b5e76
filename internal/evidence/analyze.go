package evidence

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/redact"
)

// Severities of docs/design/checks.md#intent-model, most severe first.
var severities = []string{"critical", "high", "medium", "low"}

// NeedsEvidence reports whether a finding of this severity must cite
// observations (docs/design/checks.md#intent-model: high and critical); such
// a finding also fails the report's CI gate.
func NeedsEvidence(severity string) bool { return severity == "high" || severity == "critical" }

func severityRank(s string) int {
	for i, v := range severities {
		if v == s {
			return len(severities) - i
		}
	}
	return 0
}

// checks lists the checks of docs/design/checks.md#check-order in pipeline
// order.
var checks = []string{"prompt_scan", "schema", "policy", "tripwire", "approval", "guard"}

// Event payloads the report reads. Only the fields used are declared; the
// wire names are those of docs/design/checks.md#check-events and
// docs/design/api.md#event-payloads.
type (
	verdictPayload struct {
		Step     int     `json:"step"`
		Check    string  `json:"check"`
		Phase    string  `json:"phase"`
		Decision string  `json:"decision"`
		Code     string  `json:"code"`
		Message  string  `json:"message"`
		Rule     string  `json:"rule"`
		IntentID *string `json:"intent_id"`
	}
	proposedPayload struct {
		Step     int             `json:"step"`
		IntentID string          `json:"intent_id"`
		Intent   json.RawMessage `json:"intent"`
	}
	intentBody struct {
		Action string         `json:"action"`
		Params map[string]any `json:"params"`
	}
	actionPayload struct {
		Step   int             `json:"step"`
		Name   string          `json:"name"`
		Params json.RawMessage `json:"params"`
	}
	observationPayload struct {
		Origin     string  `json:"event_origin"`
		ActionSeq  *uint64 `json:"action_seq"`
		Content    string  `json:"content"`
		Suspicious bool    `json:"suspicious"`
	}
	sandboxPayload struct {
		IntentID string `json:"intent_id"`
		Tier     string `json:"tier"`
		Run
	}
	haltPayload struct {
		Code    string `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
		Count   int    `json:"consecutive_failures"`
	}
)

// target returns the command, path or URL of an action's params.
func target(params map[string]any) string {
	for _, k := range []string{"command", "path", "url"} {
		if s, ok := params[k].(string); ok {
			return s
		}
	}
	return ""
}

// extractFindings returns the findings of every complete action IronVise
// committed in the chain, in order. A complete action a client appended
// itself is not a finding of the session (clientEvents lists it); one
// whose findings cannot be read is named in problem and contributes none.
func extractFindings(evs []ledger.Event) (out []Finding, problem string) {
	out = []Finding{}
	for i := range evs {
		ev := &evs[i]
		if ev.Type != ledger.TypeAction || !committedAction(ev) {
			continue
		}
		var a actionPayload
		if json.Unmarshal(ev.Payload, &a) != nil || a.Name != "complete" {
			continue
		}
		var p struct {
			Findings []Finding `json:"findings"`
		}
		if len(a.Params) > 0 {
			if err := json.Unmarshal(a.Params, &p); err != nil {
				if problem == "" {
					problem = fmt.Sprintf("complete action at sequence %d: findings unreadable: %v", ev.Seq, err)
				}
				continue
			}
		}
		for _, f := range p.Findings {
			f.ActionSeq = ev.Seq
			if f.EvidenceSequence == nil {
				f.EvidenceSequence = []int64{}
			}
			if f.EvidenceQuotes == nil {
				f.EvidenceQuotes = []string{}
			}
			out = append(out, f)
		}
	}
	return out, problem
}

// observations indexes the session's observation events by sequence.
type observations struct {
	byseq   map[int64]observationPayload
	actions map[uint64]intentBody
	// chain is the session's chain from sequence 0, for
	// ledger.ExecutedObservation.
	chain []ledger.Event
}

func indexObservations(evs []ledger.Event) observations {
	o := observations{byseq: map[int64]observationPayload{}, actions: map[uint64]intentBody{}, chain: evs}
	for i := range evs {
		ev := &evs[i]
		switch ev.Type {
		case ledger.TypeObservation:
			var p observationPayload
			if json.Unmarshal(ev.Payload, &p) == nil {
				o.byseq[int64(ev.Seq)] = p
			}
		case ledger.TypeAction:
			var a struct {
				Name   string         `json:"name"`
				Params map[string]any `json:"params"`
			}
			if json.Unmarshal(ev.Payload, &a) == nil {
				o.actions[ev.Seq] = intentBody{Action: a.Name, Params: a.Params}
			}
		}
	}
	return o
}

// locate resolves the evidence of one finding.
func (o observations) locate(f *Finding) []Location {
	out := make([]Location, 0, len(f.EvidenceSequence))
	for i, seq := range f.EvidenceSequence {
		loc := Location{Sequence: seq}
		quote := ""
		if i < len(f.EvidenceQuotes) {
			quote = f.EvidenceQuotes[i]
		}
		loc.Quote = quote
		obs, ok := o.byseq[seq]
		if ok && obs.ActionSeq != nil {
			if a, ok := o.actions[*obs.ActionSeq]; ok {
				loc.Action, loc.Target = a.Action, target(a.Params)
			}
		}
		// Only what IronVise observed of an action it executed is
		// evidence; a client's own observation never is.
		problem := ""
		if seq < 0 {
			problem = fmt.Sprintf("sequence %d is not in this session's chain", seq)
		} else {
			_, problem = ledger.ExecutedObservation(o.chain, uint64(seq))
		}
		if ok {
			loc.Origin = obs.Origin
			if loc.Origin == "" {
				loc.Origin = ledger.OriginLegacy
			}
		}
		switch {
		case problem != "":
			loc.Problem = problem
		case quote == "" && NeedsEvidence(f.Severity):
			loc.Problem = fmt.Sprintf("no quote: a %s finding needs a non-empty quote found in observation %d", f.Severity, seq)
		case quote != "":
			if at := strings.Index(obs.Content, quote); at < 0 {
				loc.Problem = fmt.Sprintf("quote not found in observation %d", seq)
			} else {
				loc.Verified = true
				loc.Line = 1 + strings.Count(obs.Content[:at], "\n")
			}
		default:
			loc.Verified = true
		}
		out = append(out, loc)
	}
	return out
}

// assemble builds the report of a session from its row, its events as
// stored and its verification.
func assemble(s *ledger.Session, evs []ledger.Event, chain ChainStatus, now time.Time) *Report {
	r := &Report{
		Format: ReportFormatVersion, GeneratedAt: now.UTC().Format(ledger.TimeFormat),
		Session: sessionInfo(s, len(evs)), Denials: []Denial{}, Chain: chain, ClientEvents: clientEvents(evs, s.AgentLoop),
		Egress: egressConnections(evs),
	}
	sum := &r.Summary
	sum.Status = string(s.Status)
	sum.DeniedBy = map[string]int{}
	for _, c := range checks {
		sum.DeniedBy[c] = 0
	}
	sum.Verdicts = map[string]int{}
	sum.SandboxRuns = map[string]int{}
	sum.Findings = map[string]int{}
	for _, sv := range severities {
		sum.Findings[sv] = 0
	}
	intents := map[string]intentBody{}
	for i := range evs {
		ev := &evs[i]
		switch ev.Type {
		case ledger.TypeIntentProposed:
			var p proposedPayload
			if json.Unmarshal(ev.Payload, &p) != nil {
				continue
			}
			sum.Intents++
			sum.Steps = max(sum.Steps, p.Step)
			var in intentBody
			if len(p.Intent) > 0 && string(p.Intent) != "null" && json.Unmarshal(p.Intent, &in) == nil {
				intents[p.IntentID] = in
			}
		case ledger.TypeCheckVerdict:
			var v verdictPayload
			if json.Unmarshal(ev.Payload, &v) != nil {
				continue
			}
			sum.Verdicts[v.Decision]++
			if v.Decision != "deny" {
				continue
			}
			sum.Denied++
			sum.DeniedBy[v.Check]++
			d := Denial{Sequence: ev.Seq, Step: v.Step, Check: v.Check, Phase: v.Phase, Code: v.Code, Message: v.Message, Rule: v.Rule}
			if v.IntentID != nil {
				if in, ok := intents[*v.IntentID]; ok {
					d.Action, d.Target = in.Action, target(in.Params)
				}
			}
			r.Denials = append(r.Denials, d)
			if v.Check == "prompt_scan" {
				sum.Stop = &Stop{Sequence: ev.Seq, Code: v.Code, Message: v.Message}
			}
		case ledger.TypeSandboxResult:
			var p sandboxPayload
			if json.Unmarshal(ev.Payload, &p) == nil {
				sum.SandboxRuns[p.Status]++
			}
		case ledger.TypeObservation:
			var p observationPayload
			if json.Unmarshal(ev.Payload, &p) == nil && p.Suspicious {
				sum.SuspiciousObservations++
			}
		case ledger.TypeSessionHalted, ledger.TypeCircuitBreaker:
			var p haltPayload
			if json.Unmarshal(ev.Payload, &p) == nil {
				st := &Stop{Sequence: ev.Seq, Code: p.Code, Message: p.Message}
				if ev.Type == ledger.TypeCircuitBreaker {
					st.Code, st.Message = p.Reason, fmt.Sprintf("%d consecutive failures", p.Count)
				}
				sum.Stop = st
			}
		case ledger.TypeVerifiableCredential:
			sum.Credential = true
		}
	}
	r.Actions = committedActions(evs)
	for _, a := range r.Actions {
		if a.Executed {
			sum.Executed++
		}
	}
	fs, problem := extractFindings(evs)
	sum.FindingsProblem = problem
	obs := indexObservations(evs)
	r.Findings = make([]ReportFinding, 0, len(fs))
	for i := range fs {
		f := fs[i]
		r.Findings = append(r.Findings, ReportFinding{Finding: f, Locations: obs.locate(&f)})
		sum.Findings[f.Severity]++
		if severityRank(f.Severity) > severityRank(sum.HighestSeverity) {
			sum.HighestSeverity = f.Severity
		}
	}
	sum.Gate = "pass"
	if r.Gate() {
		sum.Gate = "fail"
	}
	redactReport(r, redact.ForSession(s.ID.String()))
	return r
}

func sessionInfo(s *ledger.Session, events int) SessionInfo {
	si := SessionInfo{
		ID: s.ID.String(), Goal: s.Goal, GoalHash: s.GoalHash, Status: string(s.Status),
		LLMBackend: nonEmpty(s.LLMBackend), LLMModel: nonEmpty(s.LLMModel),
		CreatedAt: formatTime(s.CreatedAt), FinishedAt: optTime(s.FinishedAt), PolicyHash: nonEmpty(s.PolicyHash),
		SessionPublicKey: hex.EncodeToString(s.PublicKey), SessionDID: s.DID, Sealed: s.Sealed(),
		SealedAt: optTime(s.SealedAt), EventCount: events, AgentLoop: s.AgentLoop, SandboxTier: s.SandboxTier,
	}
	return si
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func formatTime(t time.Time) string { return t.UTC().Format(ledger.TimeFormat) }

func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := formatTime(t)
	return &s
}
