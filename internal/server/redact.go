package server

import "github.com/ironvise/ironvise/internal/redact"

// Stream redaction (docs/design/api.md#sse): applied to event payloads on the
// stream and in webhook bodies, never to ids, hashes or times. A redacted
// payload no longer matches its content hash, which the frame says with
// "redacted". The rules live in internal/redact, the one redactor of
// everything that leaves; credentials are removed first, whatever the
// payload's keys.

// undecodable replaces a payload that is not JSON: a ledger payload always
// is, and one that cannot be read cannot be shown to be clean.
const undecodable = `{"redacted":"payload is not JSON"}`

// RedactPayload returns the redacted copy of a JSON payload and whether
// anything changed; an unchanged payload is returned byte for byte.
func RedactPayload(payload []byte) ([]byte, bool) {
	out, changed, err := redact.StreamJSON(payload)
	if err != nil {
		return []byte(undecodable), true
	}
	return out, changed
}

// RedactString applies the string rules of docs/design/api.md#sse (after
// credentials) in order: long absolute paths, key=value secrets, IPv4 dotted
// quads, IPv6 addresses.
func RedactString(s string) string { return redact.StreamString(s) }

// sensitiveKey reports a member name whose whole value the stream replaces.
func sensitiveKey(k string) bool { return redact.StreamKey(k) }
