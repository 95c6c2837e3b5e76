package webhook

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

// Redaction of api.md §7, applied to every payload before it leaves the
// process: webhooks carry redacted content only (ledger.md §9). Ids,
// hashes and times travel beside the payload untouched, so a SIEM entry
// can still be traced to the ledger event, whose stored bytes are intact.

const (
	redacted     = "[REDACTED]"
	redactedPath = "[REDACTED_PATH]"
	redactedIP   = "[REDACTED_IP]"
)

// sensitiveKeys: an object member whose lowercase name contains one of
// these has its whole value replaced.
var sensitiveKeys = []string{"password", "secret", "token", "api_key", "apikey", "authorization", "bearer", "credential", "private_key", "access_key", "session_token"}

// secretAssign matches "password: x", "token=x", "API_KEY = x": the value
// run after the separator is replaced.
var secretAssign = regexp.MustCompile(`(?i)(api_key|password|secret|token)( *[:=] *)(\S+)`)

// Redact returns payload (a JSON document) with the redaction rules of
// api.md §7 applied, re-encoded with sorted keys, and whether anything
// changed. Numbers keep their text.
func Redact(payload []byte) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, fmt.Errorf("webhook: redact: %w", err)
	}
	changed := false
	v = redactValue(v, &changed)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, false, fmt.Errorf("webhook: redact: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), changed, nil
}

func redactValue(v any, changed *bool) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if sensitiveKey(k) {
				if s, ok := val.(string); !ok || s != redacted {
					*changed = true
				}
				x[k] = redacted
				continue
			}
			x[k] = redactValue(val, changed)
		}
		return x
	case []any:
		for i := range x {
			x[i] = redactValue(x[i], changed)
		}
		return x
	case string:
		out := RedactText(x)
		if out != x {
			*changed = true
		}
		return out
	}
	return v
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

// RedactText applies the string rules of api.md §7 in order: long absolute
// paths, secret assignments, IPv4 dotted quads, IPv6 addresses.
func RedactText(s string) string {
	s = redactPaths(s)
	s = secretAssign.ReplaceAllString(s, "${1}${2}"+redacted)
	s = redactIPv4(s)
	return redactIPv6(s)
}

// redactPaths replaces each whitespace-delimited word that starts with '/'
// and is at least 31 characters long; the whitespace stays.
func redactPaths(s string) string {
	var b strings.Builder
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
			b.WriteString(redactedPath)
		} else {
			b.WriteString(word)
		}
		i = j
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
		return redactedIP + run[len(core):], true
	})
}

// redactIPv6 replaces maximal runs of hex digits, ':' and '.' with at
// least two colons that parse as an IPv6 address (clock times such as
// 10:00:00 do not).
func redactIPv6(s string) string {
	isHex := func(c byte) bool {
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '.'
	}
	return replaceRuns(s, isHex, func(run string) (string, bool) {
		if strings.Count(run, ":") < 2 {
			return run, false
		}
		if a, err := netip.ParseAddr(run); err == nil && a.Is6() {
			return redactedIP, true
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
