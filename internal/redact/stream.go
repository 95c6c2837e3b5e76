package redact

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/strictjson"
)

// Stream redaction (docs/design/api.md#sse): what the event stream and
// webhooks apply to a payload on top of credentials, because their readers (a
// browser, a SIEM) are further from the operator than the ledger is. Ids,
// hashes and times travel beside the payload and are never touched; a
// redacted payload no longer matches its content hash, which the caller says.

// Stream redaction markers.
const (
	StreamRedacted     = "[REDACTED]"
	StreamRedactedPath = "[REDACTED_PATH]"
	StreamRedactedIP   = "[REDACTED_IP]"
)

// streamKeys are the fragments of a member name whose whole value is
// replaced (docs/design/api.md#sse rule 1).
var streamKeys = []string{"password", "secret", "token", "api_key", "apikey", "authorization", "bearer", "credential", "private_key", "access_key", "session_token"}

// secretAssign matches "password: x", "token=x", "API_KEY = x": the run
// after the separator is replaced (docs/design/api.md#sse rule 2).
var secretAssign = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(api_key|password|secret|token)( *[:=] *)(\S+)`)
})

// UndecodablePayload replaces, whole, a payload the stream redaction cannot
// read: one JSON document without duplicate member names, invalid UTF-8,
// trailing data or nesting beyond maxPayloadDepth. A ledger payload always
// is one; bytes that are not cannot be shown to be clean, so none of them
// leaves (fail closed).
const UndecodablePayload = `{"redacted":"payload is not JSON"}`

// maxPayloadDepth bounds the nesting of a payload the stream redaction
// reads, as the ledger's canonical form does.
const maxPayloadDepth = 512

// Payload is the redaction of an event payload wherever it leaves the
// process — the event stream and webhook bodies alike:
// docs/design/api.md#sse, then the credentials of Untagged, in every string
// value and every member name. It returns the payload byte for byte when
// nothing changed (a ledger payload is canonical JSON, so its hash still
// matches), and reports whether the output differs. It never fails: a payload
// it cannot read is replaced by UndecodablePayload and reported changed.
//
// Decoding is strict because a lenient decoder and the reader of the
// forwarded bytes may disagree: with a duplicate member the decoder keeps
// one value and the bytes passed through unchanged still hold the other,
// and data after the first value would pass unread.
func Payload(payload []byte) (out []byte, changed bool) {
	root, err := strictjson.Decode(payload, maxPayloadDepth)
	if err != nil {
		return []byte(UndecodablePayload), true
	}
	if !streamNode(root) {
		return payload, false
	}
	return appendNode(make([]byte, 0, len(payload)), root), true
}

// streamNode redacts n in place and reports whether anything changed.
func streamNode(n *strictjson.Node) bool {
	changed := false
	switch n.Kind {
	case strictjson.Object:
		seen := make(map[string]bool, len(n.Keys))
		for i, k := range n.Keys {
			// A member name is text too (a host or a path as a key).
			// Two names that redact alike stay two members.
			base := StreamString(k)
			rk := base
			for j := 2; seen[rk]; j++ {
				rk = base + "#" + strconv.Itoa(j)
			}
			seen[rk] = true
			if rk != k {
				changed = true
				n.Keys[i] = rk
			}
			// The value goes whole under a name that is secret-named
			// before or after its own redaction.
			if streamKey(k) || streamKey(rk) {
				v := n.Values[i]
				if v.Kind != strictjson.String || v.Str != StreamRedacted {
					changed = true
					n.Values[i] = &strictjson.Node{Kind: strictjson.String, Str: StreamRedacted}
				}
			} else {
				changed = streamNode(n.Values[i]) || changed
			}
		}
	case strictjson.Array:
		for _, e := range n.Elems {
			changed = streamNode(e) || changed
		}
	case strictjson.String:
		if out := StreamString(n.Str); out != n.Str {
			n.Str = out
			changed = true
		}
	}
	return changed
}

// appendNode appends n as compact JSON: members sorted by name, as
// encoding/json writes a map (and the ledger's canonical form orders ASCII
// names), numbers with their text, strings without HTML escaping.
func appendNode(b []byte, n *strictjson.Node) []byte {
	switch n.Kind {
	case strictjson.Object:
		order := make([]int, len(n.Keys))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(i, j int) int { return strings.Compare(n.Keys[i], n.Keys[j]) })
		b = append(b, '{')
		for i, m := range order {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, n.Keys[m])
			b = append(b, ':')
			b = appendNode(b, n.Values[m])
		}
		return append(b, '}')
	case strictjson.Array:
		b = append(b, '[')
		for i, e := range n.Elems {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNode(b, e)
		}
		return append(b, ']')
	case strictjson.String:
		return appendString(b, n.Str)
	case strictjson.Number:
		return append(b, n.Num...)
	case strictjson.Bool:
		return append(b, n.Str...)
	}
	return append(b, "null"...)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string from the strict decoder is valid UTF-8
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// streamKey reports whether a member's whole value is replaced on the
// stream and in webhooks.
func streamKey(k string) bool {
	l := strings.ToLower(k)
	for _, s := range streamKeys {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// StreamString redacts one string for the stream and webhooks: in order
// long absolute paths, secret assignments, IPv4 and IPv6 addresses
// (docs/design/api.md#sse), then any credential left (untagged placeholders;
// a ledger record already carries its session's tags). Placeholders already
// in the text are left whole, so a session's tag still reaches a SIEM.
func StreamString(s string) string {
	if strings.Contains(s, PlaceholderPrefix) {
		var b strings.Builder
		for rest := s; len(rest) > 0; {
			i := strings.Index(rest, PlaceholderPrefix)
			j := -1
			if i >= 0 {
				j = strings.IndexByte(rest[i:], ']')
			}
			if i < 0 || j < 0 {
				b.WriteString(streamRules(rest))
				break
			}
			b.WriteString(streamRules(rest[:i]))
			b.WriteString(rest[i : i+j+1])
			rest = rest[i+j+1:]
		}
		s = b.String()
	} else {
		s = streamRules(s)
	}
	return Untagged().String(s)
}

// streamRules applies docs/design/api.md#sse rule 2 to s.
func streamRules(s string) string {
	s = redactPaths(s)
	// Cheap necessary conditions first: the regular expressions are linear
	// but slow on long observations.
	if strings.ContainsAny(s, ":=") && hasAssignWord(s) {
		s = secretAssign().ReplaceAllString(s, "${1}${2}"+StreamRedacted)
	}
	s = redactIPv4(s)
	return redactIPv6(s)
}

// hasAssignWord reports whether s holds api_key, password, secret or token
// in any case.
func hasAssignWord(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "token") || strings.Contains(l, "secret") || strings.Contains(l, "password") || strings.Contains(l, "api_key")
}

// redactPaths replaces each whitespace-delimited word that starts with '/'
// and is at least 31 characters long; the whitespace stays.
func redactPaths(s string) string {
	if !strings.Contains(s, "/") {
		return s
	}
	var b strings.Builder
	changed := false
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		j := i
		for j < len(s) {
			r2, n2 := utf8.DecodeRuneInString(s[j:])
			if unicode.IsSpace(r2) {
				break
			}
			j += n2
		}
		word := s[i:j]
		if word[0] == '/' && utf8.RuneCountInString(word) >= 31 {
			b.WriteString(StreamRedactedPath)
			changed = true
		} else {
			b.WriteString(word)
		}
		i = j
	}
	if !changed {
		return s
	}
	return b.String()
}

// redactIPv4 replaces every run of digits and dots that holds a dotted
// quad: four consecutive groups of one to three digits, each 0–255
// (leading zeros included, which some parsers read as octal). A longer run
// (1.2.3.4.5) goes whole: which four of its groups are the address cannot
// be told, and a version string lost costs less than an address leaked.
func redactIPv4(s string) string {
	return replaceRuns(s, func(c byte) bool { return c >= '0' && c <= '9' || c == '.' }, func(run string) (string, bool) {
		// A sentence may end right after an address.
		core := strings.TrimRight(run, ".")
		quad := 0
		for _, p := range strings.Split(core, ".") {
			if n, err := strconv.Atoi(p); err == nil && len(p) <= 3 && n <= 255 {
				quad++
			} else {
				quad = 0
			}
			if quad == 4 {
				return StreamRedactedIP + run[len(core):], true
			}
		}
		return run, false
	})
}

// redactIPv6 replaces maximal runs of hex digits, ':' and '.' with at
// least two colons that parse as an IPv6 address (clock times such as
// 10:00:00 do not), also after the run is cut to an address: trailing
// dots and colons dropped (end of a sentence), an outer group longer than
// four digits cut to four (an address glued to a hex word).
func redactIPv6(s string) string {
	if strings.Count(s, ":") < 2 {
		return s
	}
	isV6 := func(c byte) bool {
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.'
	}
	return replaceRuns(s, isV6, func(run string) (string, bool) {
		core := strings.TrimRight(run, ".:")
		if strings.Count(core, ":") < 2 {
			return run, false
		}
		if i := strings.IndexByte(core, ':'); i > 4 {
			core = core[i-4:]
		}
		if i := strings.LastIndexByte(core, ':'); len(core)-i-1 > 4 && !strings.Contains(core[i:], ".") {
			core = core[:i+5]
		}
		if a, err := netip.ParseAddr(core); err == nil && a.Is6() {
			return StreamRedactedIP + strings.TrimPrefix(run, strings.TrimRight(run, ".")), true
		}
		return run, false
	})
}

// replaceRuns calls repl on every maximal run of bytes in the class.
func replaceRuns(s string, in func(byte) bool, repl func(string) (string, bool)) string {
	var b strings.Builder
	changed := false
	i := 0
	for i < len(s) {
		if !in(s[i]) {
			j := i
			for j < len(s) && !in(s[j]) {
				j++
			}
			b.WriteString(s[i:j])
			i = j
			continue
		}
		j := i
		for j < len(s) && in(s[j]) {
			j++
		}
		out, ok := repl(s[i:j])
		changed = changed || ok
		b.WriteString(out)
		i = j
	}
	if !changed {
		return s
	}
	return b.String()
}
