package evidence

import (
	"encoding/json"
	"fmt"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Origins in evidence (ledger origin.go): findings count only when
// IronVise committed the complete action that reports them, and evidence
// counts only when IronVise observed it from an action it executed
// (ledger.ExecutedObservation). What a client appended through the API is
// listed, labelled, and never counted.

// ClientEvent is an event a client appended through the API
// (POST /api/sessions/{id}/events): IronVise vouches that the client said
// it, never that it happened.
type ClientEvent struct {
	Sequence uint64 `json:"sequence"`
	Type     string `json:"type"`
	// Inferred is true for an event written before origins were recorded,
	// whose client origin follows from its shape (an observation naming
	// no action, an action naming no proposed intent).
	Inferred bool `json:"inferred,omitempty"`
	// Note says what the event claims that is not counted.
	Note string `json:"note,omitempty"`
}

// committedAction reports whether an action event was committed by
// IronVise after its checks: origin "ironvise", or a legacy action that
// names its proposed intent (a client could never append one that does).
func committedAction(ev *ledger.Event) bool {
	switch ledger.EventOrigin(ev.Payload) {
	case ledger.OriginIronVise:
		return true
	case ledger.OriginLegacy:
		var p struct {
			IntentSeq *uint64 `json:"intent_seq"`
		}
		return json.Unmarshal(ev.Payload, &p) == nil && p.IntentSeq != nil
	}
	return false
}

// clientEvents lists the client-appended events of a chain. agentLoop says
// whether IronVise's loop drove the session: without it nothing of IronVise
// writes thoughts, so a legacy thought there is a client's.
func clientEvents(evs []ledger.Event, agentLoop bool) []ClientEvent {
	out := []ClientEvent{}
	for i := range evs {
		ev := &evs[i]
		c := ClientEvent{Sequence: ev.Seq, Type: ev.Type}
		switch ledger.EventOrigin(ev.Payload) {
		case ledger.OriginClient:
		case ledger.OriginLegacy:
			if !legacyClientShape(ev, agentLoop) {
				continue
			}
			c.Inferred = true
		default:
			continue
		}
		if ev.Type == ledger.TypeAction {
			var a struct {
				Name   string `json:"name"`
				Params struct {
					Findings []json.RawMessage `json:"findings"`
				} `json:"params"`
			}
			if json.Unmarshal(ev.Payload, &a) == nil && a.Name == "complete" {
				c.Note = fmt.Sprintf("a complete action the client appended itself, with %d finding(s): not checked by IronVise, not counted", len(a.Params.Findings))
			}
		}
		out = append(out, c)
	}
	return out
}

// legacyClientShape reports whether a legacy event has a shape only route
// 9 ever wrote: an observation without action_seq, an action without
// intent_seq, a thought in a session no loop drove.
func legacyClientShape(ev *ledger.Event, agentLoop bool) bool {
	var p struct {
		ActionSeq *uint64 `json:"action_seq"`
		IntentSeq *uint64 `json:"intent_seq"`
	}
	if json.Unmarshal(ev.Payload, &p) != nil {
		return false
	}
	switch ev.Type {
	case ledger.TypeObservation:
		return p.ActionSeq == nil
	case ledger.TypeAction:
		return p.IntentSeq == nil
	case ledger.TypeThought:
		return !agentLoop
	}
	return false
}
