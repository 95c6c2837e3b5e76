package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/overlay"
	"github.com/ironvise/ironvise/internal/session"
)

// ironvise diff and ironvise apply (docs/cli.md#diff-and-apply): the
// change sets a session in overlay mode recorded, and their application
// to the real workspace. Both read the recorded workspace_diff events of a
// session that verifies, never the layers alone: what is applied is what
// the ledger says, and Apply refuses layers that differ from it.

func (a *app) diffCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff <session-id>",
		Short: "Show the workspace changes an overlay-mode session recorded",
		Long: `Prints the change sets a session in overlay mode (ECTO_SANDBOX_WORKSPACE=overlay)
recorded, step by step, from its workspace_diff events: a summary line per
path (added, modified, deleted, renamed, mode) and the unified diffs of text
files, credentials redacted as recorded. Steps whose changes were discarded
(a forbidden path) are listed as such. The session is verified first; a
session that does not verify is refused (exit 1).

Nothing is written: 'ironvise apply' writes the changes to the workspace.`,
		Example: `  ironvise diff 0190f1c2-7a3b-7cde-8f01-23456789abcd
  ironvise diff 0190f1c2-… --json | jq '.steps[].changes[].path'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseSessionID(args[0])
			if err != nil {
				return usageError(err)
			}
			return failedWith("", id.String(), a.runDiff(id, asJSON))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}

func (a *app) applyCommand() *cobra.Command {
	var asJSON, dryRun bool
	var through int64
	cmd := &cobra.Command{
		Use:   "apply <session-id> [--dry-run] [--through STEP]",
		Short: "Write an overlay-mode session's recorded changes to the real workspace",
		Long: `Applies the changes a session in overlay mode recorded to the real workspace
(the directory recorded in its genesis), after three checks:

  ledger      the session verifies (chain, signatures, seal)
  tampering   every layer, recomputed, gives exactly the recorded change set
              (a file changed in the overlay behind IronVise's back refuses)
  conflicts   every real file still matches the recorded base (a file changed
              on the host since, or a path the session adds that now exists,
              refuses)

A refusal names the files and changes nothing (exit 1). Otherwise each file is
replaced by rename and the application is recorded as a workspace_applied
event: on the session's chain while it is not sealed, else on the instance
chain (naming the session). Applied layers are then removed, so a later apply
takes the steps after them.

--through STEP applies the steps up to and including step STEP (the step
numbers diff prints); --dry-run checks and prints the plan, and writes and
records nothing.`,
		Example: `  ironvise apply 0190f1c2-7a3b-7cde-8f01-23456789abcd --dry-run
  ironvise apply 0190f1c2-… --through 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseSessionID(args[0])
			if err != nil {
				return usageError(err)
			}
			if through < 0 {
				return usageError(fmt.Errorf("--through %d: a step number is 1 or more (0: all steps)", through))
			}
			return failedWith("", id.String(), a.runApply(id, through, dryRun, asJSON))
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check and print the plan; write and record nothing")
	cmd.Flags().Int64Var(&through, "through", 0, "apply the steps up to and including this step (default: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}

// recordedDiff is a workspace_diff payload as read back.
type recordedDiff struct {
	Step          int64               `json:"step"`
	IntentID      string              `json:"intent_id"`
	Changes       []overlay.Change    `json:"changes"`
	DiffTruncated bool                `json:"diff_truncated,omitempty"`
	Forbidden     []overlay.Forbidden `json:"forbidden"`
	Accepted      bool                `json:"accepted"`
	Error         string              `json:"error,omitempty"`
	Seq           uint64              `json:"seq"`
}

// appliedEvent is the payload of a workspace_applied event.
type appliedEvent struct {
	Session   string           `json:"session"`
	Workspace string           `json:"workspace"`
	Steps     []int64          `json:"steps"`
	Through   int64            `json:"through"`
	By        string           `json:"by"`
	Changes   []appliedChange  `json:"changes"`
	DiffSeqs  map[int64]uint64 `json:"diff_seqs"`
}

type appliedChange struct {
	Path   string     `json:"path"`
	Op     overlay.Op `json:"op"`
	From   string     `json:"from,omitempty"`
	SHA256 string     `json:"sha256,omitempty"`
}

// sessionDiffs is what diff and apply read: the verified session's
// workspace record and change sets, and the steps already applied.
type sessionDiffs struct {
	sess      *ledger.Session
	workspace *ledger.SessionWorkspace
	diffs     []recordedDiff
	applied   map[int64]bool
}

// readDiffs verifies session id and reads its workspace_diff events and
// the steps workspace_applied events say were applied (on its chain and
// on the instance chain).
func (a *app) readDiffs(l *ledger.Ledger, id uuid.UUID) (*sessionDiffs, error) {
	v, err := evidence.VerifySession(a.ctx, l, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, exitCode(ExitUsage, failedWith(kindOf(err), "", fmt.Errorf("session %s is not in this ledger (check DATABASE_URL and ECTO_DATA_DIR)", id)))
	}
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	if !v.OK {
		msg := "the session does not verify"
		if e := v.Error; e != nil {
			msg = fmt.Sprintf("the session does not verify: %s check: %s", e.Check, e.Problem)
		}
		return nil, exitCode(ExitDenied, fmt.Errorf("session %s: %s (run 'ironvise verify-session %s'); nothing is read from it", id, msg, id))
	}
	sess, err := l.Session(a.ctx, id)
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	evs, err := l.Events(a.ctx, id, 0, 1<<20)
	if err != nil {
		return nil, exitCode(ExitUsage, fmt.Errorf("read session %s: %w", id, err))
	}
	out := &sessionDiffs{sess: sess, applied: map[int64]bool{}}
	for _, e := range evs {
		switch e.Type {
		case ledger.TypeGenesis:
			var g struct {
				Workspace *ledger.SessionWorkspace `json:"workspace"`
			}
			if err := json.Unmarshal(e.Payload, &g); err != nil {
				return nil, exitCode(ExitUsage, fmt.Errorf("session %s: decode genesis: %w", id, err))
			}
			out.workspace = g.Workspace
		case ledger.TypeWorkspaceDiff:
			if ledger.EventOrigin(e.Payload) == ledger.OriginClient {
				continue
			}
			var d recordedDiff
			if err := json.Unmarshal(e.Payload, &d); err != nil {
				return nil, exitCode(ExitUsage, fmt.Errorf("session %s: decode workspace_diff %d: %w", id, e.Seq, err))
			}
			d.Seq = e.Seq
			out.diffs = append(out.diffs, d)
		case ledger.TypeWorkspaceApplied:
			out.markApplied(e.Payload, id)
		}
	}
	inst, err := l.Events(a.ctx, ledger.InstanceSessionID, 0, 1<<20)
	if err != nil {
		return nil, exitCode(ExitUsage, fmt.Errorf("read the instance chain: %w", err))
	}
	for _, e := range inst {
		if e.Type == ledger.TypeWorkspaceApplied {
			out.markApplied(e.Payload, id)
		}
	}
	if out.workspace == nil || out.workspace.Mode != "overlay" {
		return nil, exitCode(ExitUsage, fmt.Errorf("session %s did not run in overlay mode (ECTO_SANDBOX_WORKSPACE=overlay): it has no workspace changes", id))
	}
	return out, nil
}

func (d *sessionDiffs) markApplied(payload []byte, id uuid.UUID) {
	var ev appliedEvent
	if json.Unmarshal(payload, &ev) != nil || ev.Session != id.String() {
		return
	}
	for _, s := range ev.Steps {
		d.applied[s] = true
	}
}

func (a *app) runDiff(id uuid.UUID, asJSON bool) error {
	l, err := a.openLedger()
	if err != nil {
		return err
	}
	defer closeLedger(l)
	d, err := a.readDiffs(l, id)
	if err != nil {
		return err
	}
	type stepJSON struct {
		recordedDiff
		Applied bool `json:"applied"`
	}
	steps := []stepJSON{}
	for _, r := range d.diffs {
		steps = append(steps, stepJSON{recordedDiff: r, Applied: d.applied[r.Step]})
	}
	if asJSON {
		return a.printJSON(map[string]any{"session": id.String(), "workspace": d.workspace.Path, "steps": steps})
	}
	w := a.stdout
	pending, paths := 0, 0
	for _, s := range steps {
		if s.Accepted && !s.Applied {
			pending++
			paths += len(s.Changes)
		}
	}
	fmt.Fprintf(w, "session %s, workspace %s: %d step(s) with changes to apply (%d path change(s))\n", id, d.workspace.Path, pending, paths)
	for _, s := range steps {
		state := "pending"
		switch {
		case !s.Accepted && len(s.Forbidden) > 0:
			state = "discarded: forbidden paths"
		case !s.Accepted:
			state = "discarded: " + s.Error
		case s.Applied:
			state = "applied"
		case len(s.Changes) == 0:
			state = "no changes"
		}
		fmt.Fprintf(w, "\nstep %d (workspace_diff seq %d): %s\n", s.Step, s.Seq, state)
		for _, c := range s.Changes {
			printChangeLine(w, c)
		}
		for _, f := range s.Forbidden {
			fmt.Fprintf(w, "  ! %s matches forbidden_paths %q\n", f.Change.Path, f.Glob)
		}
		if !s.Accepted {
			continue
		}
		for _, c := range s.Changes {
			switch {
			case c.Diff != "":
				fmt.Fprint(w, "\n"+c.Diff)
				if !strings.HasSuffix(c.Diff, "\n") {
					fmt.Fprintln(w)
				}
				if c.DiffTruncated {
					fmt.Fprintf(w, "  (diff of %s truncated)\n", c.Path)
				}
			case c.DiffSkipped != "":
				fmt.Fprintf(w, "\n  (no diff of %s: %s)\n", c.Path, c.DiffSkipped)
			}
		}
	}
	return nil
}

// printChangeLine prints one path of a change set.
func printChangeLine(w io.Writer, c overlay.Change) {
	line := fmt.Sprintf("  %-8s %s", c.Op, c.Path)
	switch {
	case c.Op == overlay.OpRenamed:
		line = fmt.Sprintf("  %-8s %s -> %s", c.Op, c.From, c.Path)
	case c.Op == overlay.OpMode:
		line += fmt.Sprintf(" (%s -> %s)", c.BaseMode, c.Mode)
	}
	if c.Kind == overlay.KindSymlink {
		line += " -> symlink " + c.Target
	} else if c.Kind == overlay.KindDir {
		line += "/"
	}
	fmt.Fprintln(w, line)
}

func (a *app) runApply(id uuid.UUID, through int64, dryRun, asJSON bool) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	l, err := a.openLedgerForWrite()
	if err != nil {
		return err
	}
	defer closeLedger(l)
	d, err := a.readDiffs(l, id)
	if err != nil {
		return err
	}
	if d.workspace.Path == "" {
		return exitCode(ExitUsage, fmt.Errorf("session %s: its genesis names no workspace directory to apply to", id))
	}
	var recorded []overlay.ChangeSet
	seqs := map[int64]uint64{}
	for _, r := range d.diffs {
		if !r.Accepted || d.applied[r.Step] {
			continue
		}
		recorded = append(recorded, overlay.ChangeSet{Step: r.Step, Changes: r.Changes, DiffTruncated: r.DiffTruncated})
		seqs[r.Step] = r.Seq
	}
	st, err := overlay.NewStore(session.OverlayRoot(cfg.DataDir))
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	res, err := st.Apply(overlay.ApplyOptions{Workspace: d.workspace.Path, Session: id.String(), Recorded: recorded, Through: through, DryRun: dryRun})
	var re *overlay.RefusalError
	if errors.As(err, &re) {
		var b strings.Builder
		fmt.Fprintf(&b, "apply refused, nothing was changed: %v", re.Kind)
		for _, p := range re.Problems {
			if p.Step > 0 {
				fmt.Fprintf(&b, "\n  %s (step %d): %s", p.Path, p.Step, p.Reason)
			} else {
				fmt.Fprintf(&b, "\n  %s: %s", p.Path, p.Reason)
			}
		}
		return exitCode(ExitDenied, errors.New(b.String()))
	}
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("apply: %w", err))
	}
	if !dryRun && len(res.Steps) > 0 {
		ev := appliedEvent{Session: id.String(), Workspace: d.workspace.Path, Steps: res.Steps, Through: res.Through,
			By: "operator:cli", Changes: []appliedChange{}, DiffSeqs: map[int64]uint64{}}
		for _, s := range res.Steps {
			ev.DiffSeqs[s] = seqs[s]
		}
		for _, c := range res.Changes {
			ev.Changes = append(ev.Changes, appliedChange{Path: c.Path, Op: c.Op, From: c.From, SHA256: c.SHA256})
		}
		chain := id
		if d.sess.Sealed() {
			chain = ledger.InstanceSessionID
		}
		if _, err := l.Append(a.ctx, chain, ledger.TypeWorkspaceApplied, ev); err != nil {
			return exitCode(ExitUsage, fmt.Errorf("the changes were written to %s but could not be recorded (%w); the layers are kept: record the application before applying anything else", d.workspace.Path, err))
		}
		last := slices.Max(res.Steps)
		if err := st.DropThrough(id.String(), last); err != nil {
			return exitCode(ExitUsage, fmt.Errorf("the changes were applied and recorded, but the applied layers could not be removed: %w", err))
		}
	}
	if asJSON {
		return a.printJSON(res)
	}
	verb := "applied"
	if dryRun {
		verb = "would apply (dry run, nothing written)"
	}
	if len(res.Steps) == 0 {
		fmt.Fprintf(a.stdout, "session %s: nothing to apply\n", id)
		return nil
	}
	fmt.Fprintf(a.stdout, "session %s: %s steps %v to %s\n", id, verb, res.Steps, d.workspace.Path)
	for _, c := range res.Changes {
		printChangeLine(a.stdout, c)
	}
	return nil
}

// workspaceDiffSummary is replay's line for a workspace_diff event: the
// step, what became of its layer, and each path with its operation.
func workspaceDiffSummary(payload []byte) string {
	var d recordedDiff
	if json.Unmarshal(payload, &d) != nil {
		return string(payload)
	}
	state := "kept"
	switch {
	case !d.Accepted && len(d.Forbidden) > 0:
		state = "DISCARDED (forbidden paths)"
	case !d.Accepted:
		state = "DISCARDED (" + d.Error + ")"
	}
	var parts []string
	for _, c := range d.Changes {
		p := string(c.Op) + " " + c.Path
		if c.From != "" {
			p = string(c.Op) + " " + c.From + " -> " + c.Path
		}
		parts = append(parts, p)
	}
	for _, f := range d.Forbidden {
		parts = append(parts, "forbidden "+f.Change.Path+" by "+f.Glob)
	}
	if len(parts) == 0 {
		parts = []string{"no changes"}
	}
	return fmt.Sprintf("step %d %s: %s", d.Step, state, strings.Join(parts, ", "))
}

// genesisWorkspace is the genesis's record of the workspace mode, when it
// has one.
func genesisWorkspace(p map[string]any) string {
	w, ok := p["workspace"].(map[string]any)
	if !ok {
		return ""
	}
	mode, _ := w["mode"].(string)
	out := "; workspace: " + mode
	if f, ok := w["forbidden_paths"].([]any); ok && len(f) > 0 {
		var gs []string
		for _, g := range f {
			if s, ok := g.(string); ok {
				gs = append(gs, s)
			}
		}
		out += " (forbidden: " + strings.Join(gs, ", ") + ")"
	}
	return out
}
