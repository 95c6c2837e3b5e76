package agent

import (
	"fmt"
	"strings"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/overlay"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// Writable workspaces (ECTO_SANDBOX_WORKSPACE=overlay). Each run_command
// step of the session writes into a fresh overlay layer above the real
// workspace and the session's earlier accepted layers; after the run the
// layer's change set is computed and recorded as a workspace_diff event of
// the step, staged after its sandbox_result so that the run, its changes
// and its observation commit in the one transaction the step pays for.
// A change set that touches a forbidden path fails the action: its layer
// is discarded (nothing of it is seen by later commands, nothing can be
// applied) and the observation names the paths and the rules.

// Overlay configures overlay mode for a session.
type Overlay struct {
	// Store keeps the session's layers ($ECTO_DATA_DIR/overlays).
	Store *overlay.Store
	// Forbidden are the policy's forbidden_paths globs, compiled before
	// the session started (overlay.CompileGlob).
	Forbidden []string
	// Limits bound the diffs of a change set (zero: DefaultLimits).
	Limits overlay.Limits
}

// WorkspaceResult is what overlay mode did with a step's changes.
type WorkspaceResult struct {
	Changes *overlay.ChangeSet
	// Forbidden lists the changes that touch a forbidden path; when it is
	// non-empty the layer was discarded.
	Forbidden []overlay.Forbidden
	// Accepted reports that the layer joined the session's stack.
	Accepted bool
	// Err says why no change set could be computed (the layer was
	// discarded: fail closed).
	Err string
}

// Failed reports that the action failed because of its changes.
func (w *WorkspaceResult) Failed() bool { return w != nil && !w.Accepted }

// workspaceDiffEvent is the payload of a workspace_diff event. Every
// string passes the session's redactor (stageRecord): a secret a command
// wrote into a file must not reach the ledger, the stream or a webhook
// through its diff. The content hashes are of the real bytes, so apply
// still checks the layer against them.
type workspaceDiffEvent struct {
	Step     int    `json:"step"`
	IntentID string `json:"intent_id"`
	overlay.ChangeSet
	Forbidden []overlay.Forbidden `json:"forbidden"`
	Accepted  bool                `json:"accepted"`
	Error     string              `json:"error,omitempty"`
}

// beginOverlay opens the step's layer and returns it with the request's
// overlay; on error the command must not run.
func (s *Session) beginOverlay(step int) (*overlay.Pending, error) {
	p, err := s.cfg.Overlay.Store.Begin(s.ID.String(), int64(step))
	if err != nil {
		return nil, err
	}
	if err := p.InheritRoot(s.cfg.Workspace); err != nil {
		_ = p.Discard()
		return nil, err
	}
	return p, nil
}

// finishOverlay computes the layer's change set after the run, accepts or
// discards the layer, stages the workspace_diff event, and returns the
// observation's lines about it.
func (s *Session) finishOverlay(res *StepResult, p *overlay.Pending, sr *sandbox.Result) ([]string, error) {
	wr := &WorkspaceResult{}
	res.Workspace = wr
	var lines []string
	lim := s.cfg.Overlay.Limits
	if lim == (overlay.Limits{}) {
		lim = overlay.DefaultLimits()
	}
	cs, err := p.Changes(s.cfg.Workspace, lim)
	switch {
	case err != nil:
		wr.Err = err.Error()
		lines = append(lines, "[workspace] the changes could not be read and were discarded: "+oneLine(err.Error()))
	case sr.Status != sandbox.StatusAborted && (sr.Enforced == nil || sr.Enforced.Workspace != "overlay"):
		// A tier that ignored the overlay ran the command elsewhere: its
		// layer holds nothing of it, and what it did is not recorded.
		wr.Changes = cs
		wr.Err = "the sandbox did not run the command on the workspace overlay"
		lines = append(lines, "[workspace] the sandbox did not run the command on the workspace overlay; its changes are not recorded")
	case sr.Status == sandbox.StatusAborted:
		// The tier refused to run (an overlay it could not mount among
		// the reasons): whatever the layer holds is not the command's.
		wr.Changes = cs
		wr.Err = "the sandbox aborted the run"
	default:
		wr.Changes = cs
		bad, merr := overlay.Match(cs, s.cfg.Overlay.Forbidden)
		if merr != nil {
			wr.Err = merr.Error()
			lines = append(lines, "[workspace] the forbidden paths could not be checked; the changes were discarded: "+oneLine(merr.Error()))
			break
		}
		wr.Forbidden = bad
		if len(bad) > 0 {
			lines = append(lines, forbiddenLines(bad)...)
			break
		}
		wr.Accepted = true
	}
	if wr.Accepted {
		if err := p.Accept(); err != nil {
			wr.Accepted = false
			wr.Err = err.Error()
			_ = p.Discard()
			lines = append(lines, "[workspace] the changes could not be kept and were discarded: "+oneLine(err.Error()))
		}
	} else if err := p.Discard(); err != nil {
		return nil, fmt.Errorf("discard the overlay layer of step %d: %w", res.Step, err)
	}
	ev := workspaceDiffEvent{Step: res.Step, IntentID: res.IntentID, Forbidden: wr.Forbidden, Accepted: wr.Accepted, Error: wr.Err}
	if ev.Forbidden == nil {
		ev.Forbidden = []overlay.Forbidden{}
	}
	if wr.Changes != nil {
		ev.ChangeSet = *wr.Changes
	}
	if ev.Changes == nil {
		ev.Changes = []overlay.Change{}
	}
	if wr.Accepted && len(ev.Changes) > 0 {
		lines = append(lines, fmt.Sprintf("[workspace] %d path(s) changed in the session's overlay; the real workspace is unchanged until apply", len(ev.Changes)))
	}
	if _, err := s.stageRecord(ledger.TypeWorkspaceDiff, ev, nil); err != nil {
		return nil, fmt.Errorf("record workspace_diff: %w", err)
	}
	return lines, nil
}

// MaxForbiddenLines caps the observation's lines about forbidden paths.
const MaxForbiddenLines = 5

// forbiddenLines name the forbidden paths a command touched and the rules.
func forbiddenLines(bad []overlay.Forbidden) []string {
	out := []string{fmt.Sprintf("[workspace] action failed: the policy forbids changing %d path(s); all of this command's changes were discarded", len(bad))}
	for i, f := range bad {
		if i == MaxForbiddenLines {
			out = append(out, fmt.Sprintf("[workspace] and %d more forbidden paths (every one is in the ledger)", len(bad)-i))
			break
		}
		p := f.Change.Path
		if f.Change.From != "" {
			p = f.Change.From + " -> " + p
		}
		out = append(out, "[workspace] forbidden: "+oneLine(p)+" ("+string(f.Change.Op)+") matches forbidden_paths "+quoteGlob(f.Glob))
	}
	return out
}

func quoteGlob(g string) string { return "\"" + strings.ReplaceAll(g, "\"", "\\\"") + "\"" }
