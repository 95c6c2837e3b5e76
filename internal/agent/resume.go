package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/verdict"
)

// ResumeExternal rebuilds an externally driven session from its chain, so
// that a front end may drop the in-memory state of a session that waits for
// intents (an idle one, or one of a process that restarted) and carry on
// later exactly where the ledger says it stands: the step count, the
// consecutive-denial counters, the recent actions loop detection compares,
// the flags forwarded to the guard and the last denial. evs is the
// session's chain from sequence 0. The replay follows account: a step
// whose action was committed resets the counters; a denied step counts by
// its decisive (first) denial.
func ResumeExternal(s *Session, o ExternalOptions, evs []ledger.Event) (*External, error) {
	e := NewExternal(s, o)
	type step struct {
		n         int
		allowed   bool
		decisive  *checkVerdictEvent
		action    string
		params    json.RawMessage
		completed bool
	}
	var steps []*step
	byID := map[string]*step{}
	idBySeq := map[uint64]string{}
	for i := range evs {
		ev := &evs[i]
		switch ev.Type {
		case ledger.TypeIntentProposed:
			var p struct {
				Step     int    `json:"step"`
				IntentID string `json:"intent_id"`
			}
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				return nil, fmt.Errorf("resume %s: intent_proposed %d: %w", s.ID, ev.Seq, err)
			}
			st := &step{n: p.Step}
			steps = append(steps, st)
			byID[p.IntentID] = st
			idBySeq[ev.Seq] = p.IntentID
		case ledger.TypeCheckVerdict:
			var v checkVerdictEvent
			if err := json.Unmarshal(ev.Payload, &v); err != nil {
				return nil, fmt.Errorf("resume %s: check_verdict %d: %w", s.ID, ev.Seq, err)
			}
			e.st.Flags = appendUnique(e.st.Flags, v.Flags...)
			if v.Check == verdict.CheckPromptScan {
				s.AddFlags(v.Flags...)
				continue
			}
			if v.IntentID == nil {
				continue
			}
			if st := byID[*v.IntentID]; st != nil && v.Decision == verdict.Deny && v.Phase != verdict.PhaseExecute && st.decisive == nil {
				st.decisive = &v
			}
		case ledger.TypeAction:
			// Only IronVise's commits are steps; a client's own action
			// event is not one (ledger origin.go).
			if ledger.EventOrigin(ev.Payload) == ledger.OriginClient {
				continue
			}
			var a struct {
				IntentSeq *uint64         `json:"intent_seq"`
				Name      string          `json:"name"`
				Params    json.RawMessage `json:"params"`
			}
			if json.Unmarshal(ev.Payload, &a) != nil || a.IntentSeq == nil {
				continue
			}
			if st := byID[idBySeq[*a.IntentSeq]]; st != nil && st.decisive == nil {
				st.allowed, st.action, st.params, st.completed = true, a.Name, a.Params, a.Name == "complete"
			}
		}
	}
	s.AddFlags(e.st.Flags...)
	for _, st := range steps {
		e.st.Step = max(e.st.Step, st.n)
		switch {
		case st.allowed:
			// account: loop detection keys on the action and its params
			// as encoding/json writes them.
			var params map[string]any
			json.Unmarshal(st.params, &params)
			sig, _ := json.Marshal(params)
			e.st.RecentActions = append(e.st.RecentActions, st.action+" "+string(sig))
			if len(e.st.RecentActions) > 6 {
				e.st.RecentActions = e.st.RecentActions[len(e.st.RecentActions)-6:]
			}
			e.st.Counters, e.st.LastDenial = counters{}, ""
			if st.completed {
				e.ended = &Stop{ledger.StatusCompleted, "complete", "the agent completed the goal"}
			}
		case st.decisive != nil:
			d := st.decisive
			e.out.Denied++
			e.out.DeniedBy[d.Check]++
			e.st.LastDenial = fmt.Sprintf("check=%s code=%s message=%s", d.Check, d.Code, d.Message)
			c := &e.st.Counters
			switch d.Check {
			case verdict.CheckSchema:
				c.SchemaDenials, c.CheckDenials, c.GuardDenials = c.SchemaDenials+1, c.CheckDenials+1, 0
			case verdict.CheckGuard:
				c.SchemaDenials, c.CheckDenials, c.GuardDenials = 0, 0, c.GuardDenials+1
			default:
				c.SchemaDenials, c.CheckDenials, c.GuardDenials = 0, c.CheckDenials+1, 0
			}
		}
	}
	e.out.Executed = evidence.CountExecuted(evs)
	return e, nil
}

// Steps returns the number of steps taken so far.
func (e *External) Steps() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.Step
}

// InterruptDormant records the end of an externally driven session whose
// in-memory state was dropped (ResumeExternal was not called): what
// Interrupt records — session_halted with halt_interrupted at its last
// step, then status aborted — without rebuilding the session.
func InterruptDormant(ctx context.Context, l *ledger.Ledger, id uuid.UUID, step int, message string) error {
	if _, err := l.Append(ctx, id, ledger.TypeSessionHalted, sessionHaltedEvent{Step: step, Code: string(verdict.HaltInterrupted), Message: message, Count: 1}); err != nil {
		return fmt.Errorf("record session_halted: %w", err)
	}
	if err := l.EndSession(ctx, id, ledger.StatusAborted); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}
