package shell

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ArgTest is the test an option rule applies to one command, shared by the
// tripwire's banned_arg_rules and the policy's command rules so that both
// read options the same way (see OptSpec). Every condition that is set
// must hold. Regexps must be anchored by the caller (full match).
type ArgTest struct {
	// Options: one of these options is given ("-r", "--recursive"), in a
	// cluster, with its value attached, or as a unique abbreviation.
	Options []string
	// OptionValue: the value of one of Options (of any option, when
	// Options is empty) fully matches.
	OptionValue *regexp.Regexp
	// Subcommand: the first operand fully matches; a command without
	// operands has the subcommand "".
	Subcommand *regexp.Regexp
	// Operand and LastOperand: some operand, or the last one, fully
	// matches in one of its forms (see Forms).
	Operand     *regexp.Regexp
	LastOperand *regexp.Regexp
	// OperandMatchesAll: some operand, read as an extended regular
	// expression, matches every one of these names (`pkill -f .` names
	// every process).
	OperandMatchesAll []string
	// Absent: none of these options is given (crontab without -l reads
	// a new table).
	Absent []string
}

// Empty reports a test with no condition.
func (t *ArgTest) Empty() bool {
	return len(t.Options) == 0 && t.OptionValue == nil && t.Subcommand == nil && t.Operand == nil && t.LastOperand == nil &&
		len(t.OperandMatchesAll) == 0 && len(t.Absent) == 0
}

// Match applies the test to c. forms gives the texts an operand is
// compared by; nil means Forms.
func (t *ArgTest) Match(c *Command, forms func(Word) []string) bool {
	if forms == nil {
		forms = Forms
	}
	p := &c.Parsed
	if len(t.Absent) > 0 && p.Has(t.Absent...) {
		return false
	}
	if len(t.Options) > 0 || t.OptionValue != nil {
		hit := false
		for _, o := range p.Opts {
			if len(t.Options) > 0 && !slices.Contains(t.Options, o.Name) {
				continue
			}
			if t.OptionValue != nil && (!o.HasValue || !anyMatch(t.OptionValue, forms(o.Value))) {
				continue
			}
			hit = true
			break
		}
		if !hit {
			return false
		}
	}
	if t.Subcommand != nil {
		first := ""
		if len(p.Operands) > 0 {
			first = p.Operands[0].Match
		}
		if !t.Subcommand.MatchString(first) {
			return false
		}
	}
	if t.Operand != nil && !slices.ContainsFunc(p.Operands, func(w Word) bool { return anyMatch(t.Operand, forms(w)) }) {
		return false
	}
	if t.LastOperand != nil && (len(p.Operands) == 0 || !anyMatch(t.LastOperand, forms(p.Operands[len(p.Operands)-1]))) {
		return false
	}
	if len(t.OperandMatchesAll) > 0 && !slices.ContainsFunc(p.Operands, func(w Word) bool { return matchesAll(w, t.OperandMatchesAll) }) {
		return false
	}
	return true
}

func anyMatch(re *regexp.Regexp, texts []string) bool {
	return slices.ContainsFunc(texts, re.MatchString)
}

// matchesAll reads a static word as a POSIX extended regular expression
// (Go's syntax accepts the patterns that matter here) and reports whether
// it matches every name. An empty pattern matches everything.
func matchesAll(w Word, names []string) bool {
	if !w.Static {
		return false
	}
	re, err := regexp.CompilePOSIX(w.Value)
	if err != nil {
		return false
	}
	for _, n := range names {
		if !re.MatchString(n) {
			return false
		}
	}
	return true
}

// Forms returns the texts an operand is compared by: its match text and,
// when it reads as a path, its cleaned form with home written "~" (see
// PathForm), so that `/..`, `$HOME/.` and `"${HOME:?}"` compare as `/` and
// `~`.
func Forms(w Word) []string {
	f, ok := w.PathForm()
	switch {
	case !ok || f == w.Match:
		return []string{w.Match}
	case strings.HasPrefix(w.Match, "~"):
		// The text alone cannot tell a home (~) from a file named ~
		// ('~', "~/x"); the path form can.
		return []string{f}
	}
	return []string{w.Match, f}
}

// PathForm returns the word as a cleaned path: a leading unquoted ~,
// ~user, $HOME, ${HOME} or ${HOME<op>…} with an operator that yields HOME
// whenever it is set (:? ? :- - := =) is written "~"; "." and ".."
// components are resolved lexically ("~/.." stays "~": every home
// counts); glob characters are kept. A relative path that would start
// with a literal "~" is written "./~…", so it never reads as a home. ok is
// false for a word that holds any other expansion.
func (w Word) PathForm() (string, bool) {
	switch {
	case w.word != nil:
		var b strings.Builder
		home, ok := pathText(&b, w.word.Parts, true, true)
		if !ok {
			return "", false
		}
		return formOf(home, b.String()), true
	case w.Static:
		return formOf(false, w.Value), true
	}
	s := w.Match
	for _, h := range []string{"${HOME}", "$HOME"} {
		if r, ok := strings.CutPrefix(s, h); ok && (r == "" || r[0] == '/') {
			if strings.ContainsAny(r, "$`") {
				return "", false
			}
			return formOf(true, r), true
		}
	}
	if strings.ContainsAny(s, "$`") {
		return "", false
	}
	return formOf(false, s), true
}

// formOf cleans a path; with home, rest is what follows the home ("" or
// "/…").
func formOf(home bool, rest string) string {
	if home {
		r := path.Clean("/" + rest)
		if r == "/" {
			return "~"
		}
		return "~" + r
	}
	if rest == "" {
		return ""
	}
	c := path.Clean(rest)
	if strings.HasPrefix(c, "~") {
		c = "./" + c
	}
	return c
}

// cleanForm cleans a form PathForm returned (it is one already).
func cleanForm(s string) string {
	if s == "~" || strings.HasPrefix(s, "~/") {
		return formOf(true, s[1:])
	}
	return formOf(false, s)
}

// pathText writes the parts of a word as path text; home reports that the
// word starts with a home reference, which is then left out of the text.
// tilde is false inside double quotes, where the shell does not expand ~.
// ok is false on an expansion other than HOME at the start.
func pathText(b *strings.Builder, parts []syntax.WordPart, first, tilde bool) (home, ok bool) {
	for i, part := range parts {
		lead := first && i == 0
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if lead && tilde && strings.HasPrefix(v, "~") {
				// ~ and ~user: a home directory.
				_, rest, found := strings.Cut(v, "/")
				home = true
				if found {
					b.WriteString("/")
				}
				v = rest
			}
			for k := 0; k < len(v); k++ {
				if v[k] == '\\' && k+1 < len(v) {
					k++
				}
				b.WriteByte(v[k])
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return false, false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return false, false
			}
			h, ok := pathText(b, p.Parts, lead, false)
			if !ok {
				return false, false
			}
			home = home || h
		case *syntax.ParamExp:
			if !lead || !homeParam(p) {
				return false, false
			}
			home = true
		default:
			return false, false
		}
	}
	return home, true
}

// homeParam reports $HOME, ${HOME} and the ${HOME<op>word} forms whose
// value is HOME's whenever HOME is set, as it always is in a sandbox.
func homeParam(pe *syntax.ParamExp) bool {
	if pe.Param == nil || pe.Param.Value != "HOME" || pe.Excl || pe.Length || pe.Width || pe.Index != nil || pe.Slice != nil || pe.Repl != nil {
		return false
	}
	if pe.Exp == nil {
		return true
	}
	switch pe.Exp.Op {
	case syntax.ErrorUnset, syntax.ErrorUnsetOrNull, syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		return true
	}
	return false
}
