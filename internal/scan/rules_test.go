package scan

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// owaspRules are hand-built equivalents of two OWASP Top 10 pack rules
// (docs/design/checks.md#shipped-packs); the policy package compiles the real
// ones.
func owaspRules() []ObservationRule {
	return []ObservationRule{
		{ID: "password", Label: "password", Pattern: regexp.MustCompile(`(?i)password\s*[=:]\s*\S+`), Action: RuleRedact},
		{ID: "cve_reference", Label: "cve_reference", Pattern: regexp.MustCompile(`CVE-[0-9]{4}-[0-9]{4,}`), Action: RuleFlag},
	}
}

// TestApplyRulesOWASP is docs/design/checks.md#acceptance-cases case 58.
func TestApplyRulesOWASP(t *testing.T) {
	s := newScanner(t, Medium)
	in := "config dump:\npassword=hunter2\nvulnerable to CVE-2024-1234\n"
	res, abort := ApplyRules(s.Scan(in), owaspRules())
	if abort != "" {
		t.Errorf("abort = %q; want none", abort)
	}
	if !strings.Contains(res.Sanitized, "[REDACTED:password]") || strings.Contains(res.Sanitized, "hunter2") {
		t.Errorf("sanitized = %q; want the password redacted", res.Sanitized)
	}
	if !slices.Contains(res.Labels, "policy:cve_reference") {
		t.Errorf("labels = %v; want policy:cve_reference", res.Labels)
	}
	if !strings.Contains(res.Sanitized, "CVE-2024-1234") {
		t.Errorf("a flag rule changed the text: %q", res.Sanitized)
	}
	checkInvariantsAfterRules(t, res)
}

func checkInvariantsAfterRules(t *testing.T, r Result) {
	t.Helper()
	if r.Labels == nil || !slices.IsSorted(r.Labels) || len(slices.Compact(slices.Clone(r.Labels))) != len(r.Labels) {
		t.Errorf("labels not sorted, unique and non-nil: %v", r.Labels)
	}
}

func TestApplyRules(t *testing.T) {
	re := regexp.MustCompile
	for _, tc := range []struct {
		name      string
		in        Result
		rules     []ObservationRule
		sanitized string
		labels    []string
		abort     string
	}{
		{
			name:      "no rules",
			in:        Result{Sanitized: "x", Labels: []string{}},
			sanitized: "x", labels: []string{},
		},
		{
			name:      "overlapping redactions merge, first label names them",
			in:        Result{Sanitized: "token=abcdef123456 end", Labels: []string{}},
			rules:     []ObservationRule{{ID: "a", Label: "token", Pattern: re(`token=\w+`), Action: RuleRedact}, {ID: "b", Label: "digits", Pattern: re(`[0-9]{6} end`), Action: RuleRedact}},
			sanitized: "[REDACTED:token]", labels: []string{},
		},
		{
			name:      "adjacent redactions merge",
			in:        Result{Sanitized: "aaabbb!", Labels: []string{}},
			rules:     []ObservationRule{{ID: "b", Label: "b", Pattern: re(`b+`), Action: RuleRedact}, {ID: "a", Label: "a", Pattern: re(`a+`), Action: RuleRedact}},
			sanitized: "[REDACTED:a]!", labels: []string{},
		},
		{
			name:      "rules read the same input",
			in:        Result{Sanitized: "password=hunter2", Labels: []string{}},
			rules:     []ObservationRule{{ID: "pw", Label: "password", Pattern: re(`password=\S+`), Action: RuleRedact}, {ID: "h", Label: "hunter", Pattern: re(`hunter2`), Action: RuleFlag}},
			sanitized: "[REDACTED:password]", labels: []string{"policy:hunter"},
		},
		{
			name:      "abort redacts, labels and reports the first abort rule",
			in:        Result{Sanitized: "key AKIAABCDEFGHIJKLMNOP and sk-abcdefghijklmnopqrstuvwx", Labels: []string{"invisible_chars"}, Suspicious: true},
			rules:     []ObservationRule{{ID: "ai", Label: "ai_api_key", Pattern: re(`sk-[a-z]{20,}`), Action: RuleAbort}, {ID: "aws", Label: "aws_access_key_id", Pattern: re(`AKIA[0-9A-Z]{16}`), Action: RuleAbort}},
			sanitized: "key [REDACTED:aws_access_key_id] and [REDACTED:ai_api_key]",
			labels:    []string{"invisible_chars", "policy:ai_api_key", "policy:aws_access_key_id"},
			abort:     "ai_api_key",
		},
		{
			name:      "flag without match adds nothing",
			in:        Result{Sanitized: "clean", Labels: []string{}},
			rules:     []ObservationRule{{ID: "c", Label: "cve", Pattern: re(`CVE-\d+`), Action: RuleFlag}},
			sanitized: "clean", labels: []string{},
		},
		{
			name:      "empty matches are ignored",
			in:        Result{Sanitized: "abc", Labels: []string{}},
			rules:     []ObservationRule{{ID: "e", Label: "empty", Pattern: re(`x*`), Action: RuleAbort}},
			sanitized: "abc", labels: []string{},
		},
		{
			name:      "an invalid rule fails closed",
			in:        Result{Sanitized: "abc", Labels: []string{}},
			rules:     []ObservationRule{{ID: "broken", Label: "x", Action: RuleRedact}},
			sanitized: "abc", labels: []string{"policy:invalid_rule:broken"}, abort: "invalid_rule:broken",
		},
		{
			name:      "scanner markers stay",
			in:        Result{Sanitized: "[REDACTED:scanner] password: x", Labels: []string{"you_are_now"}},
			rules:     owaspRules(),
			sanitized: "[REDACTED:scanner] [REDACTED:password]", labels: []string{"you_are_now"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.in.Labels)
			got, abort := ApplyRules(tc.in, tc.rules)
			if got.Sanitized != tc.sanitized {
				t.Errorf("sanitized = %q; want %q", got.Sanitized, tc.sanitized)
			}
			if !slices.Equal(got.Labels, tc.labels) {
				t.Errorf("labels = %v; want %v", got.Labels, tc.labels)
			}
			if abort != tc.abort {
				t.Errorf("abort = %q; want %q", abort, tc.abort)
			}
			if got.Suspicious != tc.in.Suspicious {
				t.Errorf("suspicious changed from %v to %v", tc.in.Suspicious, got.Suspicious)
			}
			if !slices.Equal(tc.in.Labels, before) {
				t.Errorf("the input labels were modified")
			}
			checkInvariantsAfterRules(t, got)
		})
	}
}

func TestObservationRuleValidate(t *testing.T) {
	p := regexp.MustCompile("x")
	for _, tc := range []struct {
		r  ObservationRule
		ok bool
	}{
		{ObservationRule{ID: "a", Label: "a", Pattern: p, Action: RuleRedact}, true},
		{ObservationRule{ID: "a", Label: "a", Pattern: p, Action: RuleAbort}, true},
		{ObservationRule{ID: "a", Label: "", Pattern: p, Action: RuleFlag}, false},
		{ObservationRule{ID: "a", Label: "a", Action: RuleFlag}, false},
		{ObservationRule{ID: "a", Label: "a", Pattern: p}, false},
		{ObservationRule{ID: "a", Label: "a", Pattern: p, Action: 9}, false},
	} {
		if err := tc.r.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v; want ok %v", tc.r, err, tc.ok)
		}
	}
	if RuleRedact.String() != "redact" || RuleFlag.String() != "flag" || RuleAbort.String() != "abort" {
		t.Errorf("RuleAction names: %v %v %v", RuleRedact, RuleFlag, RuleAbort)
	}
}
