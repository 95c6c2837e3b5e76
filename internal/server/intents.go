package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// intentResult is the IntentResult of docs/design/api.md#intents.
type intentResult struct {
	IntentID      string     `json:"intent_id"`
	SessionID     string     `json:"session_id"`
	Verdict       string     `json:"verdict"`
	Check         *string    `json:"check"`
	Rule          *string    `json:"rule"`
	Reason        *string    `json:"reason"`
	Executed      bool       `json:"executed"`
	Tier          *string    `json:"tier"`
	Permissive    bool       `json:"permissive"`
	ExitCode      *int       `json:"exit_code"`
	Observation   *string    `json:"observation"`
	ScannerLabels []string   `json:"scanner_labels"`
	SessionStatus string     `json:"session_status"`
	Events        []eventRef `json:"events"`
	Step          int        `json:"step"`
	SessionEnded  *string    `json:"session_ended"`
}

// handleIntent is route 17: one intent of an external agent through the
// checks and the sandbox. It always answers 200 once the intent was
// evaluated; a malformed intent is denied by the schema check, not refused.
func (s *Server) handleIntent(rc *reqCtx) {
	id, sess, err := s.pathSession(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	if err := intentPrecondition(sess); err != nil {
		rc.fail(err)
		return
	}
	r := s.runners.get(id)
	if r == nil || r.loop {
		rc.fail(errf(http.StatusConflict, "session %s is driven by another IronVise instance (or one that restarted); submit its intents there", id))
		return
	}
	// Processing continues when the client goes away: the intent may
	// already be committed, and its record must be complete.
	s.inflight.Add(1)
	defer s.inflight.Done()
	r.order.lock()
	defer r.order.unlock()
	r.mu.Lock()
	sealing := r.sealing
	r.mu.Unlock()
	if sealing {
		rc.fail(errf(http.StatusConflict, "session %s is sealed or being sealed: it takes no more intents", id))
		return
	}
	ctx := r.ctx
	cur, err := s.ledger().Session(ctx, id)
	if err != nil {
		rc.fail(err)
		return
	}
	if err := intentPrecondition(cur); err != nil {
		rc.fail(err)
		return
	}
	defer r.touch(time.Now())
	if r.dormant() {
		// Idle long enough to have dropped its state (idle.go): rebuilt
		// from the ledger before the intent is checked.
		if err := s.revive(ctx, r); err != nil {
			rc.fail(err)
			return
		}
	}
	res, _, err := r.ext.Submit(ctx, string(rc.body))
	switch {
	case errors.Is(err, agent.ErrClosed):
		rc.fail(errf(http.StatusConflict, "session %s has ended: it takes no more intents", id))
		return
	case errors.Is(err, ledger.ErrSealed):
		rc.fail(errf(http.StatusConflict, "session %s is sealed: it takes no more intents", id))
		return
	case err != nil:
		rc.fail(err)
		return
	}
	evs, err := s.ledger().Events(ctx, id, uint64(cur.EventCount), 0)
	if err != nil {
		rc.fail(err)
		return
	}
	after, err := s.ledger().Session(ctx, id)
	if err != nil {
		rc.fail(err)
		return
	}
	out := buildIntentResult(res, evs)
	out.SessionID = id.String()
	out.SessionStatus = string(after.Status)
	if st := r.ext.Ended(); st != nil {
		msg := st.Code + ": " + st.Message
		out.SessionEnded = &msg
		s.runners.remove(id)
		r.closeGuard()
	}
	rc.writeJSON(http.StatusOK, out)
}

// intentPrecondition is docs/design/api.md#intents: running, unsealed, not
// looped.
func intentPrecondition(sess *ledger.Session) error {
	switch {
	case sess.Sealed():
		return errf(http.StatusConflict, "session %s is sealed: it takes no more intents", sess.ID)
	case sess.Status != ledger.StatusRunning:
		return errf(http.StatusConflict, "session %s has ended (status %s): it takes no more intents", sess.ID, sess.Status)
	case sess.AgentLoop:
		return errf(http.StatusConflict, "session %s runs IronVise's agent loop; create it with \"agent_loop\": false to submit intents", sess.ID)
	}
	return nil
}

// buildIntentResult summarises a step and the events it appended.
func buildIntentResult(res *agent.StepResult, evs []ledger.Event) intentResult {
	out := intentResult{IntentID: res.IntentID, Verdict: "allow", ScannerLabels: []string{}, Events: []eventRef{}, Step: res.Step}
	str := func(v string) *string { return &v }
	for i := range evs {
		out.Events = append(out.Events, refOf(&evs[i]))
	}
	cr := res.Check
	if cr != nil && !cr.Allowed() {
		d := cr.Decisive
		out.Verdict, out.Check, out.Rule, out.Reason = "deny", str(string(d.Check)), str(string(d.Code)), str(d.Message)
	}
	// A verdict of the execute phase (a read or a redirect hop that the
	// tripwire refused at execution) denies what passed before it.
	for i := range evs {
		if evs[i].Type != ledger.TypeCheckVerdict {
			continue
		}
		var v struct {
			Check, Phase, Decision, Code, Message string
		}
		if json.Unmarshal(evs[i].Payload, &v) == nil && v.Phase == "execute" && v.Decision == "deny" {
			out.Verdict, out.Check, out.Rule, out.Reason = "deny", str(v.Check), str(v.Code), str(v.Message)
		}
	}
	if sr := res.Sandbox; sr != nil {
		out.Tier = str(string(sr.Tier))
		out.ExitCode = sr.ExitCode
		out.Permissive = sr.Status == sandbox.StatusPermissive
		if sr.Status == sandbox.StatusAborted {
			out.Verdict, out.Check, out.Rule = "abort", str("sandbox"), nil
			out.Reason = str("the sandbox could not be applied, nothing ran: " + sr.Reason)
		}
	}
	out.Executed = res.Executed()
	if o := res.Observation; o != nil {
		// The submitting agent is a model: it reads what the loop's model
		// reads, with injection attempts withheld (the ledger keeps them).
		out.Observation = str(o.ModelView())
		if o.Labels != nil {
			out.ScannerLabels = o.Labels
		}
	}
	return out
}
