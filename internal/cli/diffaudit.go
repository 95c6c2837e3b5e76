package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/evidence"
)

func (a *app) diffAuditCommand() *cobra.Command {
	var baseline, current, output string
	cmd := &cobra.Command{
		Use:   "diff-audit --baseline ID --current ID [--output FILE]",
		Short: "Compare two sessions' actions, denials and findings",
		Long: `Compares a baseline session with a current one, for example yesterday's
audit of a service with today's: which actions were executed in only one of
them, which denials are new or gone (by check, code and target), and which
findings appeared, disappeared or changed severity (findings are matched by
title). The summary is printed; --output writes the full comparison as JSON.

Exit status: 0 when the current session has no new or more severe high or
critical finding, 1 when it has (a CI gate for regressions), 2 on error.`,
		Example: `  ironvise diff-audit --baseline 0193e1c2-… --current 0193f7aa-…
  ironvise diff-audit --baseline $OLD --current $NEW --output diff.json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return a.runDiffAudit(baseline, current, output) },
	}
	cmd.Flags().StringVar(&baseline, "baseline", "", "the earlier session (required)")
	cmd.Flags().StringVar(&current, "current", "", "the later session (required)")
	cmd.Flags().StringVar(&output, "output", "", "write the comparison as JSON to this file")
	_ = cmd.MarkFlagRequired("baseline")
	_ = cmd.MarkFlagRequired("current")
	return cmd
}

// auditDiff is the comparison of two sessions.
type auditDiff struct {
	Baseline        string         `json:"baseline"`
	Current         string         `json:"current"`
	ActionsAdded    []string       `json:"actions_added"`
	ActionsRemoved  []string       `json:"actions_removed"`
	DenialsAdded    []string       `json:"denials_added"`
	DenialsRemoved  []string       `json:"denials_removed"`
	FindingsAdded   []findingDelta `json:"findings_added"`
	FindingsRemoved []findingDelta `json:"findings_removed"`
	FindingsChanged []findingDelta `json:"findings_changed"`
	Regression      bool           `json:"regression"`
}

type findingDelta struct {
	Title    string `json:"title"`
	Severity string `json:"severity"`
	Before   string `json:"before,omitempty"`
}

var severityRank = map[string]int{"low": 1, "medium": 2, "high": 3, "critical": 4}

func (a *app) runDiffAudit(baseline, current, output string) error {
	ids := make([]uuid.UUID, 2)
	for i, ref := range []string{baseline, current} {
		id, err := uuid.Parse(ref)
		if err != nil {
			return exitCode(ExitUsage, fmt.Errorf("%q is not a session id", ref))
		}
		ids[i] = id
	}
	l, err := a.openLedger()
	if err != nil {
		return err
	}
	defer closeLedger(l)
	var reps [2]*evidence.Report
	var acts [2]map[string]bool
	for i, id := range ids {
		if reps[i], err = evidence.BuildReport(a.ctx, l, id); err != nil {
			return exitCode(ExitUsage, fmt.Errorf("session %s: %w", id, err))
		}
		acts[i] = executedActions(reps[i])
	}
	d := auditDiff{Baseline: ids[0].String(), Current: ids[1].String()}
	d.ActionsAdded, d.ActionsRemoved = setDiff(acts[1], acts[0]), setDiff(acts[0], acts[1])
	den := [2]map[string]bool{denialSet(reps[0]), denialSet(reps[1])}
	d.DenialsAdded, d.DenialsRemoved = setDiff(den[1], den[0]), setDiff(den[0], den[1])
	before := map[string]string{}
	for _, f := range reps[0].Findings {
		before[f.Title] = f.Severity
	}
	seen := map[string]bool{}
	for _, f := range reps[1].Findings {
		seen[f.Title] = true
		old, ok := before[f.Title]
		switch {
		case !ok:
			d.FindingsAdded = append(d.FindingsAdded, findingDelta{Title: f.Title, Severity: f.Severity})
			d.Regression = d.Regression || severityRank[f.Severity] >= 3
		case old != f.Severity:
			d.FindingsChanged = append(d.FindingsChanged, findingDelta{Title: f.Title, Severity: f.Severity, Before: old})
			d.Regression = d.Regression || severityRank[f.Severity] >= 3 && severityRank[f.Severity] > severityRank[old]
		}
	}
	for _, f := range reps[0].Findings {
		if !seen[f.Title] {
			d.FindingsRemoved = append(d.FindingsRemoved, findingDelta{Title: f.Title, Severity: f.Severity})
		}
	}
	if output != "" {
		b, _ := json.MarshalIndent(d, "", "  ") // plain strings and bools
		if err := os.WriteFile(output, append(b, '\n'), 0o644); err != nil {
			return exitCode(ExitUsage, fmt.Errorf("--output: %w", err))
		}
	}
	printDiff(a.stdout, &d)
	if d.Regression {
		return exitCode(ExitDenied, nil)
	}
	return nil
}

// executedActions is "action target" of every executed action of r, by
// the one definition the report, the summaries and the API count with
// (docs/evidence.md#executed-actions): a command the sandbox aborted, a
// read the tripwire stopped at execution and complete never ran.
func executedActions(r *evidence.Report) map[string]bool {
	out := map[string]bool{}
	for _, a := range r.Actions {
		if a.Executed {
			out[a.Action+" "+a.Target] = true
		}
	}
	return out
}

func denialSet(r *evidence.Report) map[string]bool {
	out := map[string]bool{}
	for _, d := range r.Denials {
		out[fmt.Sprintf("%s %s: %s %s", d.Check, d.Code, d.Action, d.Target)] = true
	}
	return out
}

// setDiff returns the keys of a that are not in b, sorted.
func setDiff(a, b map[string]bool) []string {
	out := []string{}
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func printDiff(w io.Writer, d *auditDiff) {
	fmt.Fprintf(w, "baseline %s → current %s\n", d.Baseline, d.Current)
	section := func(title string, items []string) {
		fmt.Fprintf(w, "\n%s (%d)\n", title, len(items))
		for _, it := range items {
			fmt.Fprintf(w, "  %s\n", oneLine(it, 150))
		}
	}
	section("actions only in current", d.ActionsAdded)
	section("actions only in baseline", d.ActionsRemoved)
	section("new denials", d.DenialsAdded)
	section("denials gone", d.DenialsRemoved)
	var fa, fr, fc []string
	for _, f := range d.FindingsAdded {
		fa = append(fa, "["+f.Severity+"] "+f.Title)
	}
	for _, f := range d.FindingsRemoved {
		fr = append(fr, "["+f.Severity+"] "+f.Title)
	}
	for _, f := range d.FindingsChanged {
		fc = append(fc, "["+f.Before+" → "+f.Severity+"] "+f.Title)
	}
	section("new findings", fa)
	section("findings gone", fr)
	section("findings whose severity changed", fc)
	if d.Regression {
		fmt.Fprintln(w, "\nregression: the current session has a new or more severe high/critical finding")
	} else {
		fmt.Fprintln(w, "\nno new high or critical finding")
	}
}
