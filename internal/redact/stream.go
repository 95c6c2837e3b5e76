package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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
var secretAssign = regexp.MustCompile(`(?i)(api_key|password|secret|token)( *[:=] *)(\S+)`)

// StreamJSON redacts a JSON payload for the stream and webhooks:
// docs/design/api.md#sse, then the credentials of Untagged. It returns the
// payload byte for byte when nothing changed; numbers keep their text.
func StreamJSON(payload []byte) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, fmt.Errorf("redact: stream payload: %w", err)
	}
	changed := false
	v = streamValue(v, &changed)
	if !changed {
		return payload, false, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, false, fmt.Errorf("redact: stream payload: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), true, nil
}

func streamValue(v any, changed *bool) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if streamKey(k) {
				if s, ok := val.(string); !ok || s != StreamRedacted {
					*changed = true
				}
				x[k] = StreamRedacted
				continue
			}
			x[k] = streamValue(val, changed)
		}
		return x
	case []any:
		for i := range x {
			x[i] = streamValue(x[i], changed)
		}
		return x
	case string:
		out := StreamString(x)
		if out != x {
			*changed = true
		}
		return out
	}
	return v
}

// StreamKey reports whether a member's whole value is replaced on the
// stream and in webhooks (docs/design/api.md#sse rule 1).
func StreamKey(k string) bool { return streamKey(k) }

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
		s = secretAssign.ReplaceAllString(s, "${1}${2}"+StreamRedacted)
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

// redactIPv4 replaces dotted quads of four numbers 0–255.
func redactIPv4(s string) string {
	return replaceRuns(s, func(c byte) bool { return c >= '0' && c <= '9' || c == '.' }, func(run string) (string, bool) {
		// A sentence may end right after an address.
		core := strings.TrimRight(run, ".")
		parts := strings.Split(core, ".")
		if len(parts) != 4 {
			return run, false
		}
		for _, p := range parts {
			n, err := strconv.Atoi(p)
			if p == "" || len(p) > 3 || err != nil || n > 255 {
				return run, false
			}
		}
		return StreamRedactedIP + run[len(core):], true
	})
}

// redactIPv6 replaces maximal runs of hex digits, ':' and '.' with at
// least two colons that parse as an IPv6 address (clock times such as
// 10:00:00 do not).
func redactIPv6(s string) string {
	if strings.Count(s, ":") < 2 {
		return s
	}
	isV6 := func(c byte) bool {
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.'
	}
	return replaceRuns(s, isV6, func(run string) (string, bool) {
		if strings.Count(run, ":") < 2 {
			return run, false
		}
		if a, err := netip.ParseAddr(run); err == nil && a.Is6() {
			return StreamRedactedIP, true
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
