package guard

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/verdict"
)

// The two accepted reply forms (docs/design/checks.md#guard-protocol),
// compiled on first use so that starting the binary does not pay for them.
var (
	allowRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^ALLOW$`) })
	denyRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^DENY:\s*(\S.*)$`) })
)

// Reply is the guard model's reply, parsed.
type Reply struct {
	// Code is guard_allow, guard_deny or guard_unparseable.
	Code verdict.Code
	// Reason is the deny reason, or the first line for the other two
	// codes; at most MaxReasonRunes characters.
	Reason string
	// Raw is the first MaxRawBytes bytes of the reply, later lines
	// included, cut at a character boundary.
	Raw string
}

// ParseReply parses a guard model reply exactly as
// docs/design/checks.md#guard-protocol says: strip a byte-order mark and
// leading whitespace, take the text up to the first '\n', drop a trailing
// '\r', trim; then `(?i)^ALLOW$` allows and `(?i)^DENY:\s*(\S.*)$` denies
// with reason $1. Anything else ("allowed", "Allow.", "**ALLOW**", "ALLOW
// but…", a bare "DENY", nothing) is guard_unparseable, which denies: a reply
// the host cannot read with certainty must never pass as an allow.
func ParseReply(text string) Reply {
	// Invalid bytes become U+FFFD now rather than in json.Marshal, so the
	// limits below hold for the encoded response too.
	text = strings.ToValidUTF8(text, "\uFFFD")
	r := Reply{Raw: truncateBytes(text, MaxRawBytes)}
	s := strings.TrimPrefix(text, "\uFEFF")
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(s, "\r")
	s = strings.TrimSpace(s)
	switch {
	case allowRe().MatchString(s):
		r.Code, r.Reason = verdict.GuardAllow, s
	case denyRe().MatchString(s):
		r.Code, r.Reason = verdict.GuardDeny, truncateRunes(denyRe().FindStringSubmatch(s)[1], MaxReasonRunes)
	default:
		r.Code, r.Reason = verdict.GuardUnparseable, truncateRunes(s, MaxReasonRunes)
	}
	return r
}

// truncateBytes cuts s to at most n bytes without splitting a UTF-8
// sequence.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// truncateRunes cuts s to at most n code points.
func truncateRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
