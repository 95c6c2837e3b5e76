package policy

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one load error: what is wrong where.
type Problem struct {
	// Line is the 1-based line in the file; 0 when the problem is not at a
	// line (a hash mismatch, an unreadable file).
	Line int
	// Key is the key path, such as command_rules[0].args.
	Key string
	// Message says what is wrong and, where it helps, what would be right.
	Message string
}

// LoadError lists every problem of one policy file. A policy with any
// problem does not load.
type LoadError struct {
	// File is the name the policy was loaded as.
	File     string
	Problems []Problem
}

// Error implements error: one problem per line, as
// "<file>:<line>: <key path>: <problem>".
func (e *LoadError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
		if p.Key != "" {
			b.WriteString(oneLine.Replace(p.Key))
			b.WriteString(": ")
		}
		// Messages quote values from the file (a regex parse error echoes
		// the regex); a newline there would forge a second problem line.
		b.WriteString(oneLine.Replace(p.Message))
	}
	return b.String()
}

var oneLine = strings.NewReplacer("\r\n", `\r\n`, "\n", `\n`, "\r", `\r`)

// sortProblems orders problems by line, keeping the order of discovery
// within a line.
func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Line < ps[j].Line })
}
