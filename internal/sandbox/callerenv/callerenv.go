// Package callerenv is the candidate environment of a sandboxed command:
// the few variables of the caller's environment (locale, time zone,
// terminal) it may inherit. Anything else — API keys, tokens,
// DATABASE_URL — stays out of the sandbox.
//
// It imports nothing, so that exec's thin client (internal/execclient),
// which runs before the rest of the binary is initialised, sends the
// daemon exactly the list an in-process exec would use: both call
// Candidates. Every name here is one envallow.Allowed lets through (the
// tests check it), and the sandbox tiers filter again with envallow.
package callerenv

// keys are the variables a sandboxed command may inherit, in the order
// they are passed.
var keys = []string{"LANG", "LANGUAGE", "TZ", "TERM", "NO_COLOR", "COLUMNS", "LINES", "LC_ALL", "LC_CTYPE", "LC_MESSAGES"}

// Keys returns the names Candidates reads.
func Keys() []string { return append([]string(nil), keys...) }

// Candidates is the caller's value of each of the variables that look
// reports set, as KEY=VALUE in a fixed order.
func Candidates(look func(name string) (string, bool)) []string {
	var env []string
	for _, k := range keys {
		if v, ok := look(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
