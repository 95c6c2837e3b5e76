package redact

import (
	"bytes"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// A keyword says a rule may apply; most windows around a keyword still hold
// no secret, and Go's regexp costs microseconds per line for the larger
// gitleaks patterns. The conditions below are derived from a rule's regexp
// and only rule out windows in which it provably cannot match.

// clause is a set of lowercase literals of which every match holds one.
type clause []string

// requiredClauses returns clauses that every match of re satisfies: its
// literals, and for an alternation, one literal from each branch. Literals
// shorter than two bytes or not ASCII are left out (they would rule out
// little); leaving out a clause only weakens the condition.
func requiredClauses(re *syntax.Regexp) []clause {
	switch re.Op {
	case syntax.OpLiteral:
		s := string(re.Rune)
		if len(s) < 2 || !isASCIIString(s) {
			return nil
		}
		return []clause{{strings.ToLower(s)}}
	case syntax.OpCapture:
		return requiredClauses(re.Sub[0])
	case syntax.OpPlus:
		return requiredClauses(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredClauses(re.Sub[0])
		}
	case syntax.OpConcat:
		var out []clause
		subs := re.Sub
		for i := 0; i < len(subs); i++ {
			// The parser factors common prefixes out of alternations
			// ("-H|--header" becomes "-(?:H|-header)"), which leaves
			// literals too short to use; the prefix goes back into
			// each branch.
			if i+1 < len(subs) && subs[i].Op == syntax.OpLiteral && unwrap(subs[i+1]).Op == syntax.OpAlternate {
				alt := unwrap(subs[i+1])
				branches := make([]*syntax.Regexp, len(alt.Sub))
				for k, b := range alt.Sub {
					branches[k] = joinLiterals(subs[i], b)
				}
				out = append(out, requiredClauses(&syntax.Regexp{Op: syntax.OpAlternate, Sub: branches})...)
				i++
				continue
			}
			out = append(out, requiredClauses(subs[i])...)
		}
		return out
	case syntax.OpAlternate:
		// Each branch must contribute a clause; the union of one clause
		// per branch is then required.
		var union clause
		for _, sub := range re.Sub {
			cs := requiredClauses(sub)
			if len(cs) == 0 {
				return nil
			}
			union = append(union, best(cs)...)
		}
		return []clause{union}
	}
	return nil
}

// unwrap returns re without its capture groups.
func unwrap(re *syntax.Regexp) *syntax.Regexp {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	return re
}

// joinLiterals returns the concatenation of the literal lit and re, with
// lit merged into a literal that starts re.
func joinLiterals(lit, re *syntax.Regexp) *syntax.Regexp {
	re = unwrap(re)
	switch {
	case re.Op == syntax.OpLiteral:
		return &syntax.Regexp{Op: syntax.OpLiteral, Flags: lit.Flags | re.Flags, Rune: append(append([]rune(nil), lit.Rune...), re.Rune...)}
	case re.Op == syntax.OpConcat && len(re.Sub) > 0 && re.Sub[0].Op == syntax.OpLiteral:
		head := joinLiterals(lit, re.Sub[0])
		return &syntax.Regexp{Op: syntax.OpConcat, Sub: append([]*syntax.Regexp{head}, re.Sub[1:]...)}
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{lit, re}}
}

// best returns the clause most likely to rule a window out: the one whose
// shortest literal is longest.
func best(cs []clause) clause {
	bi, bl := 0, -1
	for i, c := range cs {
		short := len(c[0])
		for _, l := range c {
			short = min(short, len(l))
		}
		if short > bl {
			bi, bl = i, short
		}
	}
	return cs[bi]
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// holds reports whether the lowercase window satisfies every clause.
func holds(cs []clause, lower []byte) bool {
	for _, c := range cs {
		ok := false
		for _, l := range c {
			if bytes.Contains(lower, []byte(l)) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// assignMinValue is the shortest value of the gitleaks rules of the
// "name = value" shape (generic-api-key's {10,150}).
const assignMinValue = 10

// assignedValueEnd is the necessary condition of the "name = value" rules
// at keyword occurrence o: from the keyword on, only name, space and quote
// bytes come before an assignment operator (= > : | ? ,); after it and a few
// quote, space or '=' bytes comes a value of at least assignMinValue bytes
// that ends at a quote, a space, ';', a backslash or the end of the text
// (the rules' terminator). It returns the end of that value, or -1. It rules
// out "/api/v1" and `key, tag := hex.Encode(…)` before any regexp runs.
func assignedValueEnd(lower []byte, o int) int {
	n := len(lower)
	j := o
	for ; j < n && j < o+100; j++ {
		c := lower[j]
		if c == '=' || c == '>' || c == ':' || c == '|' || c == '?' || c == ',' {
			break
		}
		if !(isNameByte(c) || isSpace(c) || c == '\'' || c == '"') {
			return -1
		}
	}
	if j >= n || j >= o+100 {
		return -1
	}
	// The rest of the operator and the quotes, spaces and '=' before the
	// value.
	f := j + 1
	for f < n && f < j+12 && strings.IndexByte("=>:|?,`'\" \t\r\n\f\v", lower[f]) >= 0 {
		f++
	}
	if f >= n || !isValueByte(lower[f]) {
		return -1
	}
	// The value may begin with some of the '=' or ':' just skipped.
	left := f
	for left > j+1 && isValueByte(lower[left-1]) {
		left--
	}
	right := f
	for right < n && isValueByte(lower[right]) {
		right++
	}
	if right-left < assignMinValue {
		return -1
	}
	if right < n {
		switch c := lower[right]; {
		case c == '`' || c == '\'' || c == '"' || c == ';' || c == '\\' || isSpace(c):
		default:
			return -1
		}
	}
	return right
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// isValueByte reports the bytes any value class of the assignment rules
// can hold.
func isValueByte(c byte) bool {
	return isNameByte(c) || c == '=' || c == '+' || c == '/' || c == '%' || c == ':' || c == '~' || c == '@'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
