package ledger

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
)

// Event origins (docs/design/ledger.md#canonical-hashing,
// docs/design/api.md#event-payloads). Every payload this version writes
// carries its origin in an "event_origin" member, inside the hashed and
// signed bytes, so that no later reader has to guess who produced an event:
//
//   - "ironvise": IronVise wrote the event itself — its checks, its
//     commits, its sandbox runs and what it observed of them, the ledger's
//     own records. The content may quote outside input (a proposed intent,
//     a chat message), but the record is IronVise's.
//   - "client": a client appended the event verbatim through the API
//     (POST /api/sessions/{id}/events, [Ledger.AppendClient]). IronVise
//     vouches only that the client said it, never that it happened.
//
// Events written before origins were recorded have no such member; their
// origin is [OriginLegacy] and readers infer what they can from their
// shape (see ExecutedObservation).
const (
	// OriginMember is the payload member that holds the origin.
	OriginMember = "event_origin"
	// OriginIronVise marks an event IronVise produced.
	OriginIronVise = "ironvise"
	// OriginClient marks an event a client appended through the API.
	OriginClient = "client"
	// OriginLegacy is reported (never stored) for an event written before
	// origins were recorded.
	OriginLegacy = "legacy"
)

// EventOrigin returns the origin recorded in an event payload:
// OriginIronVise, OriginClient, OriginLegacy when the payload has no
// origin member, or the recorded value as is when it is something else
// (which no version of IronVise writes; evidence checks refuse it).
func EventOrigin(payload []byte) string {
	var p struct {
		Origin *string `json:"event_origin"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return "unreadable"
	}
	if p.Origin == nil {
		return OriginLegacy
	}
	return *p.Origin
}

// AppendClient appends one event a client submitted through the API, with
// the "client" origin stamped into its signed payload. It follows Append's
// rules, and also refuses a payload that names another origin itself.
// Every path that stores text a client chose as an event of its own must
// use it, never Append: evidence checks trust "ironvise" events only.
func (l *Ledger) AppendClient(ctx context.Context, session uuid.UUID, typ string, payload any) (Event, error) {
	evs, err := l.AppendBatch(ctx, session, []Record{{Type: typ, Payload: payload, Origin: OriginClient}})
	if err != nil {
		return Event{}, err
	}
	return evs[0], nil
}

// ExecutedByAgent is an action's executed_by when the agent that proposed
// it runs it itself (an agent hook): IronVise only checked it.
const ExecutedByAgent = "agent"

// Executing actions: the action names whose commit runs something that
// IronVise then observes. complete executes nothing.
var executingActions = map[string]bool{"run_command": true, "read_file": true, "http_get": true}

// observationBinding is what ExecutedObservation reads from the payloads
// involved (agent events, docs/design/api.md#event-payloads).
type observationBinding struct {
	Step             *int    `json:"step"`
	ActionSeq        *uint64 `json:"action_seq"`
	SandboxResultSeq *uint64 `json:"sandbox_result_seq"`
	Content          *string `json:"content"`
}

type actionBinding struct {
	Step       *int    `json:"step"`
	Name       string  `json:"name"`
	ExecutedBy string  `json:"executed_by"`
	IntentSeq  *uint64 `json:"intent_seq"`
	IntentID   *string `json:"intent_id"`
}

// ExecutedObservation decides whether the event at seq may serve as
// evidence: an observation that IronVise produced from an action it
// executed (docs/design/checks.md#intent-model,
// docs/design/ledger.md#evidence-exports). It returns the observation's
// content, or a problem saying why not. span holds consecutive events of one
// chain (span[i].Seq == span[0].Seq+i) that include seq and everything the
// observation refers to: from the intent_proposed its action names, to seq. A
// client-appended observation, or one that names no executed action, cannot
// be cited however it is worded:
//
//   - the observation's origin is "ironvise" (or legacy, see below);
//   - its action_seq names an earlier action event of the same origin,
//     committed by the checks (it has intent_seq) and of an executing kind
//     (run_command, read_file, http_get), in the same step;
//   - for run_command, a sandbox_result between the action and the
//     observation (named by sandbox_result_seq when recorded) reports the
//     run of that action's intent (same intent_id).
//
// Legacy events (no recorded origin) are judged by the same binding. Before
// origins existed a client could append only {"content"} observations and
// {"name","params"} actions, so a legacy client event never has the
// action_seq or intent_seq the binding requires.
func ExecutedObservation(span []Event, seq uint64) (content, problem string) {
	at := func(s uint64) *Event {
		if len(span) == 0 || s < span[0].Seq || s-span[0].Seq >= uint64(len(span)) {
			return nil
		}
		ev := &span[s-span[0].Seq]
		if ev.Seq != s {
			return nil
		}
		return ev
	}
	o := at(seq)
	if o == nil {
		return "", fmt.Sprintf("sequence %d is not in this session's chain", seq)
	}
	if o.Type != TypeObservation {
		return "", fmt.Sprintf("sequence %d is a %s event, not an observation", seq, o.Type)
	}
	origin := EventOrigin(o.Payload)
	switch origin {
	case OriginIronVise, OriginLegacy:
	case OriginClient:
		return "", fmt.Sprintf("observation %d was appended by a client (POST /api/sessions/{id}/events), not produced by IronVise from an executed action; cite the observation IronVise recorded after running the action", seq)
	default:
		return "", fmt.Sprintf("observation %d has unknown origin %q", seq, origin)
	}
	var ob observationBinding
	if err := json.Unmarshal(o.Payload, &ob); err != nil || ob.Content == nil {
		return "", fmt.Sprintf("observation %d is unreadable or has no content", seq)
	}
	if ob.ActionSeq == nil || *ob.ActionSeq >= seq {
		return "", fmt.Sprintf("observation %d names no earlier action (action_seq): it was not produced from an executed action", seq)
	}
	a := at(*ob.ActionSeq)
	if a == nil {
		return "", fmt.Sprintf("observation %d names action %d, which is not in the chain", seq, *ob.ActionSeq)
	}
	if a.Type != TypeAction {
		return "", fmt.Sprintf("observation %d names sequence %d, a %s event, as its action", seq, a.Seq, a.Type)
	}
	// An IronVise observation of a legacy action, or the reverse, does not
	// occur: one process writes a step's action and observation.
	if ao := EventOrigin(a.Payload); ao != origin {
		return "", fmt.Sprintf("observation %d (origin %s) names action %d of origin %s", seq, origin, a.Seq, ao)
	}
	var ab actionBinding
	if err := json.Unmarshal(a.Payload, &ab); err != nil {
		return "", fmt.Sprintf("action %d is unreadable", a.Seq)
	}
	if ab.IntentSeq == nil || *ab.IntentSeq >= a.Seq {
		return "", fmt.Sprintf("action %d was not committed by IronVise's checks (it names no proposed intent)", a.Seq)
	}
	if ab.ExecutedBy != "" {
		return "", fmt.Sprintf("action %d was run by the %s (an agent hook's step), not by IronVise: what it returned is not evidence of an IronVise run", a.Seq, ab.ExecutedBy)
	}
	if !executingActions[ab.Name] {
		return "", fmt.Sprintf("action %d is %q, which executes nothing IronVise could observe", a.Seq, ab.Name)
	}
	if ob.Step != nil && ab.Step != nil && *ob.Step != *ab.Step {
		return "", fmt.Sprintf("observation %d is of step %d, its action %d of step %d", seq, *ob.Step, a.Seq, *ab.Step)
	}
	if ab.Name != "run_command" {
		if ob.SandboxResultSeq != nil {
			return "", fmt.Sprintf("observation %d names a sandbox_result for a %s action", seq, ab.Name)
		}
		return *ob.Content, ""
	}
	// run_command: the sandbox_result of this action's run.
	var sr *Event
	switch {
	case ob.SandboxResultSeq != nil:
		sr = at(*ob.SandboxResultSeq)
		if sr == nil || sr.Seq <= a.Seq || sr.Seq >= seq {
			return "", fmt.Sprintf("observation %d names sandbox_result %d, which is not between its action %d and itself", seq, *ob.SandboxResultSeq, a.Seq)
		}
	case origin == OriginIronVise:
		return "", fmt.Sprintf("observation %d of run_command %d names no sandbox_result", seq, a.Seq)
	default:
		for s := seq - 1; s > a.Seq; s-- {
			if ev := at(s); ev != nil && ev.Type == TypeSandboxResult {
				sr = ev
				break
			}
		}
	}
	if sr == nil || sr.Type != TypeSandboxResult {
		return "", fmt.Sprintf("observation %d of run_command %d has no sandbox_result: the command's run is not recorded", seq, a.Seq)
	}
	if so := EventOrigin(sr.Payload); so != origin {
		return "", fmt.Sprintf("sandbox_result %d has origin %s, its observation %d %s", sr.Seq, so, seq, origin)
	}
	want := ""
	if ab.IntentID != nil {
		want = *ab.IntentID
	} else if ip := at(*ab.IntentSeq); ip != nil && ip.Type == TypeIntentProposed {
		var p struct {
			IntentID string `json:"intent_id"`
		}
		if json.Unmarshal(ip.Payload, &p) == nil {
			want = p.IntentID
		}
	}
	var sb struct {
		IntentID string `json:"intent_id"`
	}
	if err := json.Unmarshal(sr.Payload, &sb); err != nil || want == "" || sb.IntentID != want {
		return "", fmt.Sprintf("sandbox_result %d reports intent %q, not the intent %q of action %d", sr.Seq, sb.IntentID, want, a.Seq)
	}
	return *ob.Content, ""
}

// ExecutedObservation reads what the pure ExecutedObservation needs for
// the observation at seq of session and applies it: ok reports that the
// observation may serve as findings evidence, problem says why not. err is
// for failures to read the ledger.
func (l *Ledger) ExecutedObservation(ctx context.Context, session uuid.UUID, seq uint64) (content, problem string, err error) {
	first, err := l.Events(ctx, session, seq, 1)
	if err != nil {
		return "", "", err
	}
	if len(first) == 0 || first[0].Seq != seq {
		return "", fmt.Sprintf("sequence %d is not in this session's chain", seq), nil
	}
	// The span starts at the proposed intent of the action the
	// observation names; anything unreadable is judged on the one event.
	from := seq
	var ob observationBinding
	if json.Unmarshal(first[0].Payload, &ob) == nil && ob.ActionSeq != nil && *ob.ActionSeq < seq {
		from = *ob.ActionSeq
		act, err := l.Events(ctx, session, from, 1)
		if err != nil {
			return "", "", err
		}
		var ab actionBinding
		if len(act) == 1 && json.Unmarshal(act[0].Payload, &ab) == nil && ab.IntentSeq != nil && *ab.IntentSeq < from {
			from = *ab.IntentSeq
		}
	}
	span, err := l.Events(ctx, session, from, int(seq-from+1))
	if err != nil {
		return "", "", err
	}
	content, problem = ExecutedObservation(span, seq)
	return content, problem, nil
}
