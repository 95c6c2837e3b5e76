package server

import (
	"errors"
	"net/http"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/ledger"
)

// handlePending is route 24: the oldest undecided gate of a session.
func (s *Server) handlePending(rc *reqCtx) {
	id, _, err := s.pathSession(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	a, err := s.ledger().PendingApproval(rc.r.Context(), id)
	if errors.Is(err, ledger.ErrNotFound) {
		rc.writeRawJSON(http.StatusOK, []byte(`{"pending":null}`))
		return
	}
	if err != nil {
		rc.fail(err)
		return
	}
	rc.writeJSON(http.StatusOK, map[string]any{"pending": map[string]any{
		"gate_id": a.GateID.String(), "action_name": a.ActionName, "action_params_summary": a.ActionParamsSummary, "created_at": ts(a.CreatedAt),
	}})
}

// handleDecide is route 25: an operator's decision on a pending gate. The
// decision goes to the approvals table, where the instance driving the
// session picks it up and records approval_decision in the chain.
func (s *Server) handleDecide(rc *reqCtx) {
	o, err := rc.bodyObject()
	if err != nil {
		rc.fail(err)
		return
	}
	gateStr, _, e1 := o.str("gate_id", true)
	approved, _, e2 := o.boolean("approved", true)
	text, _, e3 := o.str("reason", false)
	if err := firstAPIError(e1, e2, e3); err != nil {
		rc.fail(err)
		return
	}
	id, err := rc.sessionParam()
	if err != nil {
		rc.fail(err)
		return
	}
	gate, err := parseUUID(gateStr)
	if err != nil {
		rc.fail(errf(http.StatusBadRequest, "gate_id: %v", err))
		return
	}
	sess, err := s.sessionByID(rc, id)
	if err != nil {
		rc.fail(err)
		return
	}
	if sess.Sealed() {
		rc.fail(errf(http.StatusConflict, "session %s is sealed: its gates were decided when it was sealed", id))
		return
	}
	ctx := rc.r.Context()
	a, err := s.ledger().Approval(ctx, gate)
	if errors.Is(err, ledger.ErrNotFound) || (err == nil && a.SessionID != id) {
		rc.fail(errf(http.StatusNotFound, "no pending approval gate %s in session %s", gate, id))
		return
	}
	if err != nil {
		rc.fail(err)
		return
	}
	if !a.DecidedAt.IsZero() {
		rc.fail(errf(http.StatusConflict, "approval gate %s was already decided", gate))
		return
	}
	by := rc.who.decidedBy()
	reason := agent.APIDecisionReason(by, text)
	err = s.ledger().DecideApproval(ctx, gate, approved, agent.EncodeDecision(by, &reason))
	switch {
	case errors.Is(err, ledger.ErrAlreadyDecided):
		rc.fail(errf(http.StatusConflict, "approval gate %s was already decided", gate))
		return
	case errors.Is(err, ledger.ErrNotFound):
		rc.fail(errf(http.StatusNotFound, "no pending approval gate %s in session %s", gate, id))
		return
	case err != nil:
		rc.fail(err)
		return
	}
	s.wake.signal()
	rc.writeRawJSON(http.StatusOK, []byte(`{"ok":true}`))
}
