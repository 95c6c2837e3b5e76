package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// makeWord reduces a parsed word. src is the script the word came from, for
// the match text of non-static words.
func makeWord(wd *syntax.Word, src string) Word {
	w := Word{word: wd}
	if v, ok := staticValue(wd); ok {
		w.Static, w.Value, w.Match = true, v, v
		return w
	}
	start, end := int(wd.Pos().Offset()), int(wd.End().Offset())
	if start >= 0 && end <= len(src) && start <= end {
		w.Match = unquoteMatch.Replace(src[start:end])
	}
	return w
}

// unquoteMatch drops quote characters from a word's source text; a
// Replacer is safe for concurrent use and is built once.
var unquoteMatch = strings.NewReplacer(`'`, "", `"`, "")

// staticValue returns the word's value after POSIX quote removal, and false
// when the word is not static (docs/design/checks.md#command-walk): any part
// other than a literal, a single-quoted string or a double-quoted string of
// literals; an unescaped glob character outside quotes; a leading unquoted ~.
func staticValue(wd *syntax.Word) (string, bool) {
	var b strings.Builder
	for i, part := range wd.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				return "", false // tilde expansion depends on the environment
			}
			// bash (also when it runs as /bin/sh) reads $'…' as ANSI-C
			// quoting and $"…" as a translated string; dash reads a
			// literal $. A word whose meaning differs between the shells
			// that may be /bin/sh is not static: `$'\x73udo'` is sudo in
			// bash.
			if endsWithUnescapedDollar(p.Value) && i+1 < len(wd.Parts) {
				switch wd.Parts[i+1].(type) {
				case *syntax.SglQuoted, *syntax.DblQuoted:
					return "", false
				}
			}
			if !unquoteLit(&b, p.Value, closesLater(wd.Parts[i+1:])) {
				return "", false
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, dp := range p.Parts {
				lit, ok := dp.(*syntax.Lit)
				if !ok {
					return "", false
				}
				unquoteDbl(&b, lit.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unquoteLit removes unquoted backslash escapes; it reports false on an
// unescaped glob character, which makes the word pathname-expanded at run
// time: * and ?, and [ when a ] follows it (in s, or in a later part of
// the word when closeLater). A [ that nothing closes is an ordinary
// character: `[ -f x ]` runs the program "[" (test).
func unquoteLit(b *strings.Builder, s string, closeLater bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' { // backslash-newline vanishes
					b.WriteByte(s[i])
				}
			}
			continue
		case '*', '?':
			return false
		case '[':
			// POSIX: a ] right after [ (or [!) is a member, not the end.
			if closeLater || strings.IndexByte(s[min(i+2, len(s)):], ']') >= 0 {
				return false
			}
		}
		b.WriteByte(c)
	}
	return true
}

// closesLater reports whether any later part of a word holds a "]".
func closesLater(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.Contains(p.Value, "]") {
				return true
			}
		case *syntax.SglQuoted:
			if strings.Contains(p.Value, "]") {
				return true
			}
		case *syntax.DblQuoted:
			if closesLater(p.Parts) {
				return true
			}
		}
	}
	return false
}

// unquoteDbl applies the escapes valid inside double quotes: \$ \` \" \\ and
// backslash-newline. Any other backslash is kept literally.
func unquoteDbl(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
}

func endsWithUnescapedDollar(s string) bool {
	if !strings.HasSuffix(s, "$") {
		return false
	}
	n := 0
	for i := len(s) - 2; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 0
}

// tmpDirTarget recognises a redirection target $TMPDIR or ${TMPDIR}
// followed by static parts, possibly inside one pair of double quotes, and
// returns the static rest. The rest must be empty or start with "/" —
// ${TMPDIR}x names a sibling of the scratch directory, not a file in it.
func tmpDirTarget(wd *syntax.Word) (rest string, ok bool) {
	parts := wd.Parts
	if len(parts) == 1 {
		if dq, isDq := parts[0].(*syntax.DblQuoted); isDq && !dq.Dollar {
			parts = dq.Parts
			if len(parts) == 0 {
				return "", false
			}
			pe, isPe := parts[0].(*syntax.ParamExp)
			if !isPe || !simpleParam(pe, "TMPDIR") {
				return "", false
			}
			var b strings.Builder
			for _, p := range parts[1:] {
				lit, isLit := p.(*syntax.Lit)
				if !isLit {
					return "", false
				}
				unquoteDbl(&b, lit.Value)
			}
			return checkRest(b.String())
		}
	}
	pe, isPe := parts[0].(*syntax.ParamExp)
	if !isPe || !simpleParam(pe, "TMPDIR") {
		return "", false
	}
	restWord := &syntax.Word{Parts: parts[1:]}
	if len(restWord.Parts) == 0 {
		return "", true
	}
	// The rest must be static; a leading ~ is harmless here but the
	// static rules reject it, which is the conservative answer.
	v, static := staticValue(restWord)
	if !static {
		return "", false
	}
	return checkRest(v)
}

func checkRest(v string) (string, bool) {
	if v != "" && !strings.HasPrefix(v, "/") {
		return "", false
	}
	for _, c := range strings.Split(v, "/") {
		if c == ".." {
			return "", false
		}
	}
	return v, true
}

// simpleParam reports $NAME or ${NAME} with no operator.
func simpleParam(pe *syntax.ParamExp, name string) bool {
	return pe.Param != nil && pe.Param.Value == name && !pe.Excl && !pe.Length && !pe.Width &&
		pe.Index == nil && pe.Slice == nil && pe.Repl == nil && pe.Names == 0 && pe.Exp == nil &&
		pe.Flags == nil && pe.NestedParam == nil && len(pe.Modifiers) == 0
}
