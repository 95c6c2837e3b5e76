package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

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

func (a *app) runDiff(id uuid.UUID, asJSON bool) error {
	l, err := a.openLedger()
	if err != nil {
		return err
	}
	defer closeLedger(l)
	d, err := a.readWorkspace(l, id)
	if err != nil {
		return err
	}
	type stepJSON struct {
		session.RecordedDiff
		Applied   bool `json:"applied"`
		Discarded bool `json:"discarded,omitempty"`
	}
	steps := []stepJSON{}
	for _, r := range d.Diffs {
		steps = append(steps, stepJSON{RecordedDiff: r, Applied: d.Applied[r.Step], Discarded: d.Discarded[r.Step]})
	}
	if asJSON {
		return a.printJSON(map[string]any{"session": id.String(), "workspace": d.Workspace.Path, "steps": steps})
	}
	w := a.stdout
	pending, paths := 0, 0
	for _, s := range steps {
		if s.Accepted && !s.Applied && !s.Discarded {
			pending++
			paths += len(s.Changes)
		}
	}
	fmt.Fprintf(w, "session %s, workspace %s: %d step(s) with changes to apply (%d path change(s))\n", id, d.Workspace.Path, pending, paths)
	for _, s := range steps {
		state := "pending"
		switch {
		case !s.Accepted && len(s.Forbidden) > 0:
			state = "discarded: forbidden paths"
		case !s.Accepted:
			state = "discarded: " + s.Error
		case s.Applied:
			state = "applied"
		case s.Discarded:
			state = "discarded unapplied (ironvise discard)"
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

// readWorkspace is session.ReadWorkspace with the command line's exit
// statuses: 1 for a session that does not verify, 2 otherwise.
func (a *app) readWorkspace(l *ledger.Ledger, id uuid.UUID) (*session.WorkspaceRecord, error) {
	d, err := session.ReadWorkspace(a.ctx, l, id)
	return d, applyError(id, err)
}

// applyError maps the errors of reading and applying to exit statuses: a
// refusal (conflict, tampering, unsafe mode) or a session that does not
// verify is 1 and names the files; anything else is 2.
func applyError(id uuid.UUID, err error) error {
	var re *overlay.RefusalError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ledger.ErrNotFound):
		return exitCode(ExitUsage, failedWith(kindOf(err), "", fmt.Errorf("session %s is not in this ledger (check DATABASE_URL and ECTO_DATA_DIR)", id)))
	case errors.As(err, &re):
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
	case errors.Is(err, session.ErrUnverified):
		return exitCode(ExitDenied, err)
	}
	return exitCode(ExitUsage, err)
}

func (a *app) discardCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "discard <session-id>",
		Short: "Throw away an ended overlay-mode session's unapplied changes",
		Long: `Throws away the changes an overlay-mode session kept and nobody applied: the
session's layers are removed from $ECTO_DATA_DIR/overlays, so they stop taking
space, and a workspace_discarded event records who discarded which steps and
paths (on the session's chain while it is not sealed, else on the instance
chain). The real workspace is not touched. The session must have ended: a
running session's next command runs on its layers. After a discard, apply has
nothing left to apply and diff marks the steps discarded.`,
		Example: `  ironvise discard 0190f1c2-7a3b-7cde-8f01-23456789abcd`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseSessionID(args[0])
			if err != nil {
				return usageError(err)
			}
			return failedWith("", id.String(), a.runDiscard(id, asJSON))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}

func (a *app) runDiscard(id uuid.UUID, asJSON bool) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	l, err := a.openLedgerForWrite()
	if err != nil {
		return err
	}
	defer closeLedger(l)
	ev, err := session.DiscardWorkspace(a.ctx, l, cfg.DataDir, id, "operator:cli")
	if errors.Is(err, session.ErrSessionRunning) {
		return exitCode(ExitUsage, err)
	}
	if err != nil {
		return applyError(id, err)
	}
	if asJSON {
		return a.printJSON(ev)
	}
	if len(ev.Steps) == 0 {
		fmt.Fprintf(a.stdout, "session %s: nothing to discard\n", id)
		return nil
	}
	fmt.Fprintf(a.stdout, "session %s: discarded steps %v (%d path change(s)); the real workspace is unchanged\n", id, ev.Steps, len(ev.Changes))
	return nil
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
	res, err := session.ApplyWorkspace(a.ctx, l, cfg.DataDir, id, through, dryRun, "operator:cli")
	if err != nil {
		return applyError(id, err)
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
	fmt.Fprintf(a.stdout, "session %s: %s steps %v\n", id, verb, res.Steps)
	for _, c := range res.Changes {
		printChangeLine(a.stdout, c)
	}
	return nil
}

// workspaceDiffSummary is replay's line for a workspace_diff event: the
// step, what became of its layer, and each path with its operation.
func workspaceDiffSummary(payload []byte) string {
	var d session.RecordedDiff
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
	if n, _ := w["narrowed_by_policy"].(bool); n {
		out += " (narrowed by the policy)"
	}
	if n, _ := w["narrowed_by_session"].(bool); n {
		out += " (asked for by the session)"
	}
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
