package redact

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ValuePlaceholder replaces a known secret value (an API key the process
// holds) in text about to leave it. It carries no tag: the value is the
// operator's own, not a finding of the rules.
const ValuePlaceholder = "[redacted]"

// MinSubstringSecret is the length, in bytes, from which a known secret is
// redacted wherever it occurs, also inside a longer word. A shorter secret
// is redacted only where it stands as a whole token. The reasoning is in
// docs/threat-model.md#redaction-of-known-secret-values.
const MinSubstringSecret = 8

// Values returns t with every disclosure of the known secret values
// replaced by ValuePlaceholder. A secret of MinSubstringSecret bytes or more
// is replaced wherever it occurs. A shorter one is replaced only where it is
// a whole token: where its first character is a word character (a letter, a
// digit or '_'), the character before it is not one, and where its last
// character is a word character, the character after it is not one; the
// start and end of t count as non-word characters. (This is the \b of
// regular expressions: "-x" is a whole token in "a-x", "k" is none in
// "kitten".) Empty secrets are ignored.
//
// All occurrences are found in t as given, before any replacement, so one
// secret can neither hide nor form another by way of a placeholder, and
// overlapping occurrences are replaced as one span.
func Values(t string, secrets ...string) string {
	var spans [][2]int
	for _, s := range secrets {
		if s == "" {
			continue
		}
		anywhere := len(s) >= MinSubstringSecret
		for from := 0; from <= len(t)-len(s); {
			i := strings.Index(t[from:], s)
			if i < 0 {
				break
			}
			i += from
			if anywhere || wholeToken(t, s, i) {
				spans = append(spans, [2]int{i, i + len(s)})
			}
			// Step one byte, not past the match: "aaa" holds "aa" twice,
			// and the union of both is what must go.
			from = i + 1
		}
	}
	if len(spans) == 0 {
		return t
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a][0] < spans[b][0] })
	var b strings.Builder
	b.Grow(len(t))
	last := 0
	for k := 0; k < len(spans); {
		start, end := spans[k][0], spans[k][1]
		for k++; k < len(spans) && spans[k][0] <= end; k++ {
			end = max(end, spans[k][1])
		}
		b.WriteString(t[last:start])
		b.WriteString(ValuePlaceholder)
		last = end
	}
	b.WriteString(t[last:])
	return b.String()
}

// wholeToken reports whether the occurrence of secret at t[i:] is not glued
// to a word: no word character joins a word character at either of its
// edges. An edge that is itself no word character needs no boundary, so a
// secret that touches a redacted neighbour through such an edge is still
// found, and redacting one occurrence never leaves another standing alone.
func wholeToken(t, secret string, i int) bool {
	if first, _ := utf8.DecodeRuneInString(secret); i > 0 && isWordRune(first) {
		if r, _ := utf8.DecodeLastRuneInString(t[:i]); isWordRune(r) {
			return false
		}
	}
	e := i + len(secret)
	if last, _ := utf8.DecodeLastRuneInString(secret); e < len(t) && isWordRune(last) {
		if r, _ := utf8.DecodeRuneInString(t[e:]); isWordRune(r) {
			return false
		}
	}
	return true
}

// isWordRune reports whether r joins a token. Invalid UTF-8 decodes to
// utf8.RuneError, which is not a word rune: a secret next to broken bytes is
// redacted, the safe side.
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
