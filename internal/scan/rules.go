package scan

import (
	"fmt"
	"regexp"
	"slices"
)

// RuleAction is what a policy observation rule does with its matches
// (docs/design/checks.md#scanner-pipeline step 8).
type RuleAction uint8

// The rule actions. The zero value is invalid, so an unset action fails
// validation rather than silently doing nothing.
const (
	// RuleRedact replaces matches with "[REDACTED:<label>]".
	RuleRedact RuleAction = iota + 1
	// RuleFlag adds the label "policy:<label>".
	RuleFlag
	// RuleAbort redacts its matches, adds "policy:<label>" and makes the
	// session halt (halt_observation_abort) after the observation is
	// appended.
	RuleAbort
)

// String returns the policy spelling: redact, flag or abort.
func (a RuleAction) String() string {
	switch a {
	case RuleRedact:
		return "redact"
	case RuleFlag:
		return "flag"
	case RuleAbort:
		return "abort"
	}
	return fmt.Sprintf("RuleAction(%d)", uint8(a))
}

// ObservationRule is one compiled policy observation_rules entry.
type ObservationRule struct {
	// ID identifies the rule in messages; Label names it in markers and
	// labels.
	ID, Label string
	// Pattern is matched against the scanner's content (credentials
	// already replaced).
	Pattern *regexp.Regexp
	// Action is what a match does.
	Action RuleAction
}

// Validate reports a rule that ApplyRules cannot apply. The policy
// package calls it at load time so a broken rule is a load error.
func (r ObservationRule) Validate() error {
	switch {
	case r.Label == "":
		return fmt.Errorf("scan: observation rule %q: empty label", r.ID)
	case r.Pattern == nil:
		return fmt.Errorf("scan: observation rule %q: no pattern", r.ID)
	case r.Action < RuleRedact || r.Action > RuleAbort:
		return fmt.Errorf("scan: observation rule %q: action %v (accepted: redact, flag, abort)", r.ID, r.Action)
	}
	return nil
}

// PolicyLabel returns the label a rule adds to an observation.
func PolicyLabel(label string) string { return "policy:" + label }

// ApplyRules applies policy observation rules to a scanner result
// (docs/design/checks.md#scanner-pipeline step 8). Every rule reads the same
// input, res.Content, so rules cannot see or undo each other's edits. Redact
// and abort spans are merged and replaced with "[REDACTED:<label>]"; flag and
// abort add "policy:<label>" to the labels, which stay sorted and unique. The
// scanner's spans are moved with the text (a span that touches a replaced
// run covers it whole) and Sanitized is rebuilt from them.
//
// The credential placeholders of the scan are never replaced: a rule such
// as password\s*[:=]\s*\S+ still redacts "password=", but the tag that lets
// an auditor confirm the secret survives. A Result built by hand with only
// Sanitized set has the rules applied to Sanitized.
//
// abortLabel is the label of the first abort rule, in rule order, that
// matched; the caller appends the observation, then halts the session. A
// rule that fails Validate aborts with its ID as the label: a policy that
// cannot be applied must not let the observation through unchecked.
func ApplyRules(res Result, rules []ObservationRule) (Result, string) {
	legacy := res.Content == "" && len(res.Spans) == 0 && len(res.Secrets) == 0
	in := res.Content
	if legacy {
		in = res.Sanitized
	}
	keep := make([]span, 0, len(res.Secrets))
	for _, r := range res.Secrets {
		keep = append(keep, span{r.Start, r.End})
	}
	var spans []labeledSpan
	labels := slices.Clone(res.Labels)
	abortLabel := ""
	for i, r := range rules {
		if r.Validate() != nil {
			if abortLabel == "" {
				abortLabel = "invalid_rule:" + r.ID
			}
			labels = append(labels, PolicyLabel("invalid_rule:"+r.ID))
			continue
		}
		locs := r.Pattern.FindAllStringIndex(in, -1)
		matched := false
		for _, m := range locs {
			if m[1] <= m[0] {
				continue // an empty match has nothing to redact or flag
			}
			matched = true
			if r.Action == RuleFlag {
				continue
			}
			for _, part := range outside(m[0], m[1], keep) {
				spans = append(spans, labeledSpan{part, r.Label, i})
			}
		}
		if !matched {
			continue
		}
		if r.Action != RuleRedact {
			labels = append(labels, PolicyLabel(r.Label))
		}
		if r.Action == RuleAbort && abortLabel == "" {
			abortLabel = r.Label
		}
	}
	out, runs := redactLabeled(in, spans)
	if legacy {
		res.Sanitized = out
	} else if len(runs) > 0 {
		sh := shift{runs}
		res.Content = out
		res.Spans = slices.Clone(res.Spans)
		for i := range res.Spans {
			res.Spans[i].Start, res.Spans[i].End = sh.start(res.Spans[i].Start), sh.end(res.Spans[i].End)
		}
		res.Secrets = slices.Clone(res.Secrets)
		for i := range res.Secrets {
			res.Secrets[i].Start, res.Secrets[i].End = sh.start(res.Secrets[i].Start), sh.end(res.Secrets[i].End)
		}
		res.Sanitized = ModelView(out, res.Spans)
	}
	slices.Sort(labels)
	res.Labels = slices.Compact(labels)
	if res.Labels == nil {
		res.Labels = []string{}
	}
	return res, abortLabel
}
