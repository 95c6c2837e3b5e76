package server

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"regexp"
	"strings"
)

// Stream redaction (api.md §7): applied to event payloads on the stream and
// in webhook bodies, never to ids, hashes or times. A redacted payload no
// longer matches its content hash, which the frame says with "redacted".

// sensitiveKeys are the key-name fragments whose whole value is replaced.
var sensitiveKeys = []string{"password", "secret", "token", "api_key", "apikey", "authorization", "bearer", "credential", "private_key", "access_key", "session_token"}

var (
	reKeyValue = regexp.MustCompile(`(?i)(api_key|password|secret|token)( *[:=] *)(\S+)`)
	reIPv4     = regexp.MustCompile(`\b(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\b`)
)

const (
	redactedValue = "[REDACTED]"
	redactedPath  = "[REDACTED_PATH]"
	redactedIP    = "[REDACTED_IP]"
)

// RedactPayload returns the redacted copy of a JSON payload and whether
// anything changed; an unchanged payload is returned byte for byte.
func RedactPayload(payload []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber() // numbers pass unchanged
	var v any
	if err := dec.Decode(&v); err != nil {
		return payload, false
	}
	nv, changed := redactValue(v)
	if !changed {
		return payload, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(nv); err != nil {
		// Cannot happen for decoded JSON; never fall back to the original.
		return []byte(`{"type":"redacted"}`), true
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

func redactValue(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		changed := false
		for k, val := range x {
			if sensitiveKey(k) {
				if s, ok := val.(string); !ok || s != redactedValue {
					x[k] = redactedValue
					changed = true
				}
				continue
			}
			nv, c := redactValue(val)
			if c {
				x[k] = nv
				changed = true
			}
		}
		return x, changed
	case []any:
		changed := false
		for i, val := range x {
			nv, c := redactValue(val)
			if c {
				x[i] = nv
				changed = true
			}
		}
		return x, changed
	case string:
		r := RedactString(x)
		return r, r != x
	}
	return v, false
}

func sensitiveKey(k string) bool {
	l := strings.ToLower(k)
	for _, s := range sensitiveKeys {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// RedactString applies the string rules of api.md §7 in order: long
// absolute paths, key=value secrets, IPv4 dotted quads, IPv6 addresses.
func RedactString(s string) string {
	s = redactPaths(s)
	// Cheap necessary conditions first: the regular expressions are linear
	// but slow on long observations, and most strings hold neither a key
	// word nor a dotted number.
	if strings.ContainsAny(s, ":=") && hasKeyWord(s) {
		s = reKeyValue.ReplaceAllString(s, "${1}${2}"+redactedValue)
	}
	if hasDottedDigits(s) {
		s = reIPv4.ReplaceAllString(s, redactedIP)
	}
	return redactIPv6(s)
}

// hasKeyWord reports whether s contains api_key, password, secret or token
// in any case.
func hasKeyWord(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "token") || strings.Contains(l, "secret") || strings.Contains(l, "password") || strings.Contains(l, "api_key")
}

// hasDottedDigits reports whether s contains a digit, a dot and a digit in a
// row (every dotted quad does).
func hasDottedDigits(s string) bool {
	for i := 1; i+1 < len(s); i++ {
		if s[i] == '.' && isDigit(s[i-1]) && isDigit(s[i+1]) {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// redactPaths replaces whitespace-delimited words that start with "/" and
// are at least 31 characters long, keeping the whitespace around them.
func redactPaths(s string) string {
	if !strings.Contains(s, "/") {
		return s
	}
	var b strings.Builder
	i := 0
	changed := false
	for i < len(s) {
		if isSpace(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
		w := s[i:j]
		if w[0] == '/' && len([]rune(w)) >= 31 {
			b.WriteString(redactedPath)
			changed = true
		} else {
			b.WriteString(w)
		}
		i = j
	}
	if !changed {
		return s
	}
	return b.String()
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// redactIPv6 replaces maximal runs of hex digits, ':' and '.' that hold at
// least two colons and parse as an IPv6 address. Clock times such as
// 10:00:00 do not parse and stay.
func redactIPv6(s string) string {
	if strings.Count(s, ":") < 2 {
		return s
	}
	var b strings.Builder
	changed := false
	i := 0
	for i < len(s) {
		if !isV6Char(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && isV6Char(s[j]) {
			j++
		}
		run := s[i:j]
		if strings.Count(run, ":") >= 2 {
			if a, err := netip.ParseAddr(run); err == nil && a.Is6() {
				b.WriteString(redactedIP)
				changed = true
				i = j
				continue
			}
		}
		b.WriteString(run)
		i = j
	}
	if !changed {
		return s
	}
	return b.String()
}

func isV6Char(c byte) bool {
	return c == ':' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
