package agent

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/ledger"
)

// DecidedByAPIPrefix starts the decided_by of a decision posted through the
// API: "operator:api:<label of the deciding token>"
// (docs/design/checks.md#check-events).
const DecidedByAPIPrefix = "operator:api:"

// DefaultApprovalPoll is how often a waiting gate looks for its decision.
const DefaultApprovalPoll = 100 * time.Millisecond

// APIApprover implements check.Approver for sessions served over the HTTP
// API (docs/design/api.md#tokens-webhooks-policies,
// docs/design/checks.md#approval-gates "REST"): it records the pending gate
// in the ledger's approvals table, where every instance sharing the database
// sees it, and waits until a decision is stored there (route 25, or a seal)
// or the gate times out.
//
// The approvals table is the one arbiter: a timeout is itself stored with
// DecideApproval, so when a decision and the timeout race, whichever the
// database took first is the decision recorded — never both.
type APIApprover struct {
	Ledger    *ledger.Ledger
	SessionID uuid.UUID
	// Poll is how often the table is read (DefaultApprovalPoll).
	Poll time.Duration
	// Wake, when set, returns a channel that is signalled when a decision
	// was stored by this process, so the wait ends without polling delay.
	Wake func() <-chan struct{}
}

// Decide implements check.Approver.
func (a *APIApprover) Decide(ctx context.Context, req check.ApprovalRequest) check.ApprovalDecision {
	gate, err := uuid.Parse(req.GateID)
	if err != nil {
		return failedDecision("approval gate id: " + err.Error())
	}
	if err := a.Ledger.OpenApproval(ctx, ledger.Approval{
		GateID: gate, SessionID: a.SessionID, ActionName: req.ActionName, ActionParamsSummary: req.ActionParamsSummary,
	}); err != nil {
		// What cannot be recorded cannot be approved: fail closed.
		return failedDecision("the approval request could not be recorded: " + err.Error())
	}
	poll := a.Poll
	if poll <= 0 {
		poll = DefaultApprovalPoll
	}
	deadline := time.NewTimer(time.Duration(req.TimeoutSeconds) * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var wake <-chan struct{}
	for {
		if a.Wake != nil {
			wake = a.Wake()
		}
		if d, ok := a.stored(ctx, gate); ok {
			return d
		}
		select {
		case <-tick.C:
		case <-wake:
		case <-deadline.C:
			return a.expire(ctx, gate, req.OnTimeout == "allow", "timeout")
		case <-ctx.Done():
			// The session is being stopped (shutdown): deny, and store it
			// so no decision can arrive for a gate nobody waits on.
			return a.expire(context.WithoutCancel(ctx), gate, false, "session interrupted")
		}
	}
}

// stored returns the decision of a gate once one is in the table.
func (a *APIApprover) stored(ctx context.Context, gate uuid.UUID) (check.ApprovalDecision, bool) {
	ap, err := a.Ledger.Approval(ctx, gate)
	if err != nil || ap.DecidedAt.IsZero() {
		return check.ApprovalDecision{}, false
	}
	by, reason := DecodeDecision(ap.Reason)
	return check.ApprovalDecision{Approved: ap.Approved, DecidedBy: by, Reason: reason, TimedOut: by == check.DecidedByTimeout}, true
}

// expire stores the timeout decision, unless a decision won the race, in
// which case that one is returned.
func (a *APIApprover) expire(ctx context.Context, gate uuid.UUID, approved bool, why string) check.ApprovalDecision {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := a.Ledger.DecideApproval(wctx, gate, approved, EncodeDecision(check.DecidedByTimeout, &why))
	if errors.Is(err, ledger.ErrAlreadyDecided) {
		if d, ok := a.stored(wctx, gate); ok {
			return d
		}
	}
	if err != nil && !errors.Is(err, ledger.ErrAlreadyDecided) {
		approved = false // the timeout could not be stored: fail closed
	}
	return check.ApprovalDecision{Approved: approved, DecidedBy: check.DecidedByTimeout, Reason: &why, TimedOut: true}
}

func failedDecision(why string) check.ApprovalDecision {
	return check.ApprovalDecision{Approved: false, DecidedBy: check.DecidedByNoApprover, Reason: &why, TimedOut: true}
}

// storedDecision is how a decision is kept in the approvals table's reason
// column: decided_by and the reason travel together, so the instance that
// waits on the gate records exactly what the deciding instance was told.
type storedDecision struct {
	DecidedBy string  `json:"decided_by"`
	Reason    *string `json:"reason"`
}

// EncodeDecision is the approvals-table form of a decision (see
// DecodeDecision).
func EncodeDecision(decidedBy string, reason *string) string {
	b, _ := json.Marshal(storedDecision{DecidedBy: decidedBy, Reason: reason})
	return string(b)
}

// DecodeDecision reads EncodeDecision's form. A value written by something
// else is kept whole as the reason, decided by the API.
func DecodeDecision(s string) (decidedBy string, reason *string) {
	var d storedDecision
	if err := json.Unmarshal([]byte(s), &d); err == nil && d.DecidedBy != "" {
		return d.DecidedBy, d.Reason
	}
	return DecidedByAPIPrefix + "unknown", &s
}

// APIDecisionReason is the recorded reason of a decision posted through the
// API (docs/design/api.md#tokens-webhooks-policies): decided_by, then ":
// <reason>" when the operator gave one.
func APIDecisionReason(decidedBy, text string) string {
	if text == "" {
		return decidedBy
	}
	return decidedBy + ": " + text
}
