package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/overlay"
	"github.com/ironvise/ironvise/internal/policy"
)

// ApplyGate is the gate an agent-loop session in overlay mode opens when
// it completes with changes kept in its layers: the real workspace changes
// only if an approver grants it (docs/reference/sandboxing.md#overlay-workspaces).
const ApplyGate = "workspace_apply"

// ApplyAction is the action_name of the apply gate's approval request.
const ApplyAction = "apply_workspace"

// applyGate runs before an agent-loop session in overlay mode ends: when
// the session completed and kept changes no one applied yet, it opens the
// apply gate through the session's approver (the API's approvals table, the
// terminal of audit --interactive) and, once granted, applies the changes
// as the approver. Without an approver, a denial or a timeout (on_timeout
// is always deny here) the layers stay, and `ironvise apply` or
// POST /api/sessions/{id}/apply can still apply them. A refusal of the
// apply itself (a file changed on the host, a tampered layer) is logged and
// leaves the layers too; the session still ends completed. Only a failure
// to record is an error.
func (s *Session) applyGate(ctx context.Context, st *overlay.Store, status ledger.Status, lastStep int) error {
	if status != ledger.StatusCompleted {
		return nil
	}
	// Without a layer there is nothing to apply: the session's
	// verification and the instance chain's scan are not needed.
	if layers, err := st.Layers(s.ID.String()); err != nil {
		return fmt.Errorf("the workspace apply gate: %w", err)
	} else if len(layers) == 0 {
		return nil
	}
	w, err := ReadWorkspace(ctx, s.rt.Ledger, s.ID)
	if err != nil {
		return fmt.Errorf("the workspace apply gate: %w", err)
	}
	var steps []int64
	var paths []string
	for _, d := range w.Pending() {
		if len(d.Changes) == 0 {
			continue
		}
		steps = append(steps, d.Step)
		for _, c := range d.Changes {
			paths = append(paths, c.Path)
		}
	}
	if len(steps) == 0 {
		return nil
	}
	timeout := policy.DefaultTimeoutSeconds
	if s.spec.Policy != nil {
		timeout = s.spec.Policy.ApprovalTimeoutSeconds()
	}
	req := check.ApprovalRequest{
		Step: lastStep, GateID: uuid.NewString(), Gates: []string{ApplyGate},
		Reasons:    []string{fmt.Sprintf("the session changed %d path(s) in its overlay of %s; the real workspace changes only if this is approved", len(paths), w.Workspace.Path)},
		ActionName: ApplyAction, ActionParamsSummary: applySummary(steps, paths),
		TimeoutSeconds: timeout, OnTimeout: "deny",
	}
	d, err := s.Agent.RecordApproval(ctx, req)
	if err != nil {
		return err
	}
	if !d.Approved {
		return nil
	}
	_, err = applyWorkspace(ctx, s.rt.Ledger, s.rt.OverlayRoot, s.ID, 0, false, d.DecidedBy)
	var refused *overlay.RefusalError
	if errors.As(err, &refused) {
		if s.rt.Logger != nil {
			s.rt.Logger.Warn("workspace apply refused after approval; the changes stay in the session's layers", "session", s.ID.String(), "err", err)
		}
		return nil
	}
	return err
}

// applySummary is the apply gate's action_params_summary: the steps and
// the changed paths, as many as fit check.MaxParamsSummary.
func applySummary(steps []int64, paths []string) string {
	for n := len(paths); ; n-- {
		v := map[string]any{"steps": steps, "paths": paths[:n]}
		if n < len(paths) {
			v["more_paths"] = len(paths) - n
		}
		b, err := json.Marshal(v)
		if err == nil && (len(b) <= check.MaxParamsSummary || n == 0) {
			return string(b)
		}
	}
}
