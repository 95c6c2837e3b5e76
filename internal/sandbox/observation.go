package sandbox

import (
	"strconv"
	"strings"
)

// StderrSeparator is the line between stdout and stderr in an observation.
const StderrSeparator = "--- stderr ---"

// Headline is the first line of the observation (sandbox.md §1.1):
// "[exit N]", "[signal NAME]", "[timeout after N s]" or
// "[sandbox aborted: reason]".
func (r Result) Headline() string {
	switch {
	case r.Status == StatusAborted:
		reason := r.Reason
		if reason == "" {
			reason = "unknown reason"
		}
		return "[sandbox aborted: " + reason + "]"
	case r.Status == StatusTimeout:
		return "[timeout after " + strconv.FormatInt(int64(r.Duration.Seconds()), 10) + " s]"
	case r.Signal != "":
		return "[signal " + r.Signal + "]"
	case r.ExitCode != nil:
		return "[exit " + strconv.Itoa(*r.ExitCode) + "]"
	}
	return "[sandbox aborted: no exit status]"
}

// Observation composes the text the agent sees from the result (sandbox.md
// §1.1): the headline, then stdout, then — if stderr is non-empty — a line
// "--- stderr ---" and stderr. The streams are already capped; the scanner
// (checks.md §10) runs on this text afterwards.
func (r Result) Observation() string {
	var b strings.Builder
	b.Grow(len(r.Stdout) + len(r.Stderr) + 64)
	b.WriteString(r.Headline())
	b.WriteByte('\n')
	b.WriteString(r.Stdout)
	if r.Stderr != "" {
		if r.Stdout != "" && !strings.HasSuffix(r.Stdout, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(StderrSeparator)
		b.WriteByte('\n')
		b.WriteString(r.Stderr)
	}
	return b.String()
}
