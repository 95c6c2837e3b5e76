package config

import (
	"slices"
	"strings"
)

// switchWords are the documented spellings of a yes/no variable.
type switchWords struct {
	on, off []string
	// fold compares without regard to case.
	fold bool
	// accepted is the list the error shows, as the docs write it.
	accepted string
}

// The spellings of IronVise's yes/no variables, as each is documented.
var (
	// wordsTrueFalse: ECTO_SANDBOX_PERMISSIVE (sandboxing.md: "any value
	// but true/false is a startup error").
	wordsTrueFalse = switchWords{on: []string{"true"}, off: []string{"false"}, accepted: "true, false, or unset"}
	// wordsTrueFalseAnyCase: the WEBHOOK_* switches (evidence.md).
	wordsTrueFalseAnyCase = switchWords{on: []string{"true"}, off: []string{"false"}, fold: true, accepted: "true, false, or unset"}
	// wordsDemo: ECTO_DEMO_MODE (docs/design/api.md#server-config).
	wordsDemo = switchWords{on: []string{"1", "true"}, off: []string{"0", "false"}, fold: true, accepted: "1, true, 0, false, or unset"}
	// wordsGuardRequired: GUARD_REQUIRED (llm.md).
	wordsGuardRequired = switchWords{on: []string{"true", "1", "yes"}, off: []string{"false", "0", "no"}, fold: true, accepted: "true, 1, yes, false, 0, no (any case), or unset"}
)

// switchVar reads a yes/no variable: one of w's spellings or unset (an
// empty value counts as unset, as with get); anything else is an error
// naming the variable, and def is returned.
//
// Unlike get it does not trim. A padded value such as " true" usually
// comes from a quoting slip in a unit file or a .env line, and for a
// switch that turns confinement or the guard off, guessing what the
// operator meant is the failure the docs promise never happens: "any other
// value is a startup error" (docs/reference/sandboxing.md).
func (r *reader) switchVar(name string, def bool, w switchWords) bool {
	v, ok := r.look(name)
	if !ok || v == "" {
		return def
	}
	if strings.TrimSpace(v) != v {
		r.fail(name, v, "has leading or trailing blanks", w.accepted+", written without blanks")
		return def
	}
	s := v
	if w.fold {
		s = strings.ToLower(v)
	}
	switch {
	case slices.Contains(w.on, s):
		return true
	case slices.Contains(w.off, s):
		return false
	}
	r.fail(name, v, "unknown value", w.accepted)
	return def
}
