package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/overlay"
)

// Reading and applying the change sets of a session in overlay mode
// (docs/cli.md#diff-and-apply), shared by ironvise diff/apply and the API.
// Both read the recorded workspace_diff events of a session that
// verifies, never the layers alone: what is applied is what the ledger
// says, and overlay.Store.Apply refuses layers that differ from it.

// RecordedDiff is a workspace_diff payload as read back.
type RecordedDiff struct {
	Step          int64               `json:"step"`
	IntentID      string              `json:"intent_id"`
	Changes       []overlay.Change    `json:"changes"`
	DiffTruncated bool                `json:"diff_truncated,omitempty"`
	Forbidden     []overlay.Forbidden `json:"forbidden"`
	Accepted      bool                `json:"accepted"`
	Error         string              `json:"error,omitempty"`
	// Seq is the event's sequence (not part of the payload).
	Seq uint64 `json:"seq"`
}

// AppliedEvent is the payload of a workspace_applied event.
type AppliedEvent struct {
	Session   string           `json:"session"`
	Workspace string           `json:"workspace"`
	Steps     []int64          `json:"steps"`
	Through   int64            `json:"through"`
	By        string           `json:"by"`
	Changes   []AppliedChange  `json:"changes"`
	DiffSeqs  map[int64]uint64 `json:"diff_seqs"`
}

// AppliedChange is one path of a workspace_applied event.
type AppliedChange struct {
	Path   string     `json:"path"`
	Op     overlay.Op `json:"op"`
	From   string     `json:"from,omitempty"`
	SHA256 string     `json:"sha256,omitempty"`
}

// Errors of ReadWorkspace besides the ledger's.
var (
	// ErrUnverified: the session does not verify; nothing is read from it.
	ErrUnverified = errors.New("the session does not verify")
	// ErrNotOverlay: the session did not run in overlay mode.
	ErrNotOverlay = errors.New("the session did not run in overlay mode (ECTO_SANDBOX_WORKSPACE=overlay): it has no workspace changes")
)

// WorkspaceRecord is what a verified session recorded of its workspace.
type WorkspaceRecord struct {
	Session   *ledger.Session
	Workspace *ledger.SessionWorkspace
	Diffs     []RecordedDiff
	// Applied are the steps workspace_applied events say were applied.
	Applied map[int64]bool
	// Discarded are the steps workspace_discarded events say were thrown
	// away unapplied.
	Discarded map[int64]bool
}

// Settled reports whether step was applied or discarded.
func (w *WorkspaceRecord) Settled(step int64) bool { return w.Applied[step] || w.Discarded[step] }

// Pending returns the accepted change sets that no workspace_applied or
// workspace_discarded event has settled yet, in step order; a step whose
// command changed nothing is among them (its layer exists).
func (w *WorkspaceRecord) Pending() []RecordedDiff {
	var out []RecordedDiff
	for _, r := range w.Diffs {
		if r.Accepted && !w.Settled(r.Step) {
			out = append(out, r)
		}
	}
	return out
}

// record appends a workspace_applied or workspace_discarded event (typ)
// about the session: on its chain while it is not sealed, else on the
// instance chain, since a sealed chain takes no more events.
func (w *WorkspaceRecord) record(ctx context.Context, l *ledger.Ledger, typ string, ev *AppliedEvent) error {
	chain := w.Session.ID
	if w.Session.Sealed() {
		chain = ledger.InstanceSessionID
	}
	_, err := l.Append(ctx, chain, typ, ev)
	return err
}

// appliedChanges is what the events record of each change: the path, the
// operation, the old path of a rename, and the new content's hash.
func appliedChanges(cs []overlay.Change) []AppliedChange {
	out := make([]AppliedChange, 0, len(cs))
	for _, c := range cs {
		out = append(out, AppliedChange{Path: c.Path, Op: c.Op, From: c.From, SHA256: c.SHA256})
	}
	return out
}

// ReadWorkspace verifies session id and reads its genesis workspace
// record, its workspace_diff events and the steps workspace_applied
// events (on its chain and on the instance chain) say were applied.
func ReadWorkspace(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (*WorkspaceRecord, error) {
	v, err := evidence.VerifySession(ctx, l, id)
	if err != nil {
		return nil, err
	}
	if !v.OK {
		msg := ""
		if e := v.Error; e != nil {
			msg = fmt.Sprintf(": %s check: %s", e.Check, e.Problem)
		}
		return nil, fmt.Errorf("session %s: %w%s (run 'ironvise verify-session %s'); nothing is read from it", id, ErrUnverified, msg, id)
	}
	sess, err := l.Session(ctx, id)
	if err != nil {
		return nil, err
	}
	evs, err := l.Events(ctx, id, 0, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", id, err)
	}
	out := &WorkspaceRecord{Session: sess, Applied: map[int64]bool{}, Discarded: map[int64]bool{}}
	for _, e := range evs {
		switch e.Type {
		case ledger.TypeGenesis:
			var g struct {
				Workspace *ledger.SessionWorkspace `json:"workspace"`
			}
			if err := json.Unmarshal(e.Payload, &g); err != nil {
				return nil, fmt.Errorf("session %s: decode genesis: %w", id, err)
			}
			out.Workspace = g.Workspace
		case ledger.TypeWorkspaceDiff:
			if ledger.EventOrigin(e.Payload) == ledger.OriginClient {
				continue
			}
			var d RecordedDiff
			if err := json.Unmarshal(e.Payload, &d); err != nil {
				return nil, fmt.Errorf("session %s: decode workspace_diff %d: %w", id, e.Seq, err)
			}
			d.Seq = e.Seq
			out.Diffs = append(out.Diffs, d)
		case ledger.TypeWorkspaceApplied:
			mark(out.Applied, e.Payload, id)
		case ledger.TypeWorkspaceDiscarded:
			mark(out.Discarded, e.Payload, id)
		}
	}
	inst, err := l.Events(ctx, ledger.InstanceSessionID, 0, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("read the instance chain: %w", err)
	}
	for _, e := range inst {
		switch e.Type {
		case ledger.TypeWorkspaceApplied:
			mark(out.Applied, e.Payload, id)
		case ledger.TypeWorkspaceDiscarded:
			mark(out.Discarded, e.Payload, id)
		}
	}
	if out.Workspace == nil || out.Workspace.Mode != "overlay" {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotOverlay)
	}
	return out, nil
}

// mark adds the steps of a workspace_applied or workspace_discarded event
// of session id to steps.
func mark(steps map[int64]bool, payload []byte, id uuid.UUID) {
	var ev AppliedEvent
	if json.Unmarshal(payload, &ev) != nil || ev.Session != id.String() {
		return
	}
	for _, s := range ev.Steps {
		steps[s] = true
	}
}

// ApplyWorkspace applies the pending accepted steps of session id (up to
// and including step through; 0 all) to the workspace its genesis names,
// with the overlay store under dataDir, and records workspace_applied as
// by: on the session's chain while it is not sealed, else on the instance
// chain. A refusal is an *overlay.RefusalError naming the files. A dry
// run records nothing.
func ApplyWorkspace(ctx context.Context, l *ledger.Ledger, dataDir string, id uuid.UUID, through int64, dryRun bool, by string) (*overlay.ApplyResult, error) {
	return applyWorkspace(ctx, l, OverlayRoot(dataDir), id, through, dryRun, by)
}

// applyWorkspace is ApplyWorkspace with the overlay store's root.
func applyWorkspace(ctx context.Context, l *ledger.Ledger, root string, id uuid.UUID, through int64, dryRun bool, by string) (*overlay.ApplyResult, error) {
	w, err := ReadWorkspace(ctx, l, id)
	if err != nil {
		return nil, err
	}
	if w.Workspace.Path == "" {
		return nil, fmt.Errorf("session %s: its genesis names no workspace directory to apply to", id)
	}
	var recorded []overlay.ChangeSet
	seqs := map[int64]uint64{}
	for _, r := range w.Pending() {
		recorded = append(recorded, overlay.ChangeSet{Step: r.Step, Changes: r.Changes, DiffTruncated: r.DiffTruncated})
		seqs[r.Step] = r.Seq
	}
	st, err := overlay.NewStore(root)
	if err != nil {
		return nil, err
	}
	// No command of the session may run on the layers while they are
	// written out and dropped, in this process or another.
	unlock, err := st.Lock(id.String())
	if err != nil {
		return nil, fmt.Errorf("session %s: %w; try again when its command has finished", id, err)
	}
	defer unlock()
	res, err := st.Apply(overlay.ApplyOptions{Workspace: w.Workspace.Path, Session: id.String(), Recorded: recorded, Through: through, DryRun: dryRun})
	if err != nil {
		return nil, err
	}
	if dryRun || len(res.Steps) == 0 {
		return res, nil
	}
	ev := &AppliedEvent{Session: id.String(), Workspace: w.Workspace.Path, Steps: res.Steps, Through: res.Through,
		By: by, Changes: appliedChanges(res.Changes), DiffSeqs: map[int64]uint64{}}
	for _, s := range res.Steps {
		ev.DiffSeqs[s] = seqs[s]
	}
	if err := w.record(ctx, l, ledger.TypeWorkspaceApplied, ev); err != nil {
		return nil, fmt.Errorf("the changes were written to %s but could not be recorded (%w); the layers are kept: record the application before applying anything else", w.Workspace.Path, err)
	}
	if err := st.DropThrough(id.String(), slices.Max(res.Steps)); err != nil {
		return nil, fmt.Errorf("the changes were applied and recorded, but the applied layers could not be removed: %w", err)
	}
	return res, nil
}

// ErrSessionRunning: the session is still running; its next step needs
// its layers.
var ErrSessionRunning = errors.New("the session is still running: its next command runs on its layers")

// DiscardWorkspace throws away the pending accepted changes of session id,
// which must have ended: it records workspace_discarded as by (steps,
// paths) on the session's chain while it is not sealed, else on the
// instance chain, then removes the session's layers from the overlay store
// under dataDir. The record comes first: layers that vanish unrecorded
// would look like tampering to a later apply. With nothing pending it
// records nothing and still removes what is left of the layers.
func DiscardWorkspace(ctx context.Context, l *ledger.Ledger, dataDir string, id uuid.UUID, by string) (*AppliedEvent, error) {
	w, err := ReadWorkspace(ctx, l, id)
	if err != nil {
		return nil, err
	}
	if w.Session.Status == ledger.StatusRunning && !w.Session.Sealed() {
		return nil, fmt.Errorf("session %s: %w; end or seal it first", id, ErrSessionRunning)
	}
	ev := &AppliedEvent{Session: id.String(), Workspace: w.Workspace.Path, Steps: []int64{}, By: by,
		Changes: []AppliedChange{}, DiffSeqs: map[int64]uint64{}}
	for _, r := range w.Pending() {
		if len(r.Changes) == 0 {
			continue
		}
		ev.Steps = append(ev.Steps, r.Step)
		ev.DiffSeqs[r.Step] = r.Seq
		ev.Through = r.Step
		ev.Changes = append(ev.Changes, appliedChanges(r.Changes)...)
	}
	st, err := overlay.NewStore(OverlayRoot(dataDir))
	if err != nil {
		return nil, err
	}
	unlock, err := st.Lock(id.String())
	if err != nil {
		return nil, fmt.Errorf("session %s: %w; try again later", id, err)
	}
	// Remove deletes the lock file with the directory; holding it until
	// then keeps a late Begin out.
	defer unlock()
	if len(ev.Steps) > 0 {
		if err := w.record(ctx, l, ledger.TypeWorkspaceDiscarded, ev); err != nil {
			return nil, fmt.Errorf("record workspace_discarded (nothing was removed): %w", err)
		}
	}
	if err := st.Remove(id.String()); err != nil {
		return nil, fmt.Errorf("the discard is recorded, but the layers could not be removed: %w", err)
	}
	return ev, nil
}
