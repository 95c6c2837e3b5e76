package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ironvise/ironvise/internal/redact"
)

// Redaction of docs/design/api.md#sse, applied to every payload before it
// leaves the process: webhooks carry redacted content only
// (docs/design/ledger.md#siem-egress). Ids, hashes and times travel beside
// the payload untouched, so a SIEM entry can still be traced to the ledger
// event, whose stored bytes are intact. The rules live in internal/redact,
// the one redactor of everything that leaves; credentials a ledger record
// still holds are removed too.

// Redact returns payload (a JSON document) with the redaction rules of
// docs/design/api.md#sse and credentials applied, re-encoded with sorted
// keys, and whether anything changed. Numbers keep their text.
func Redact(payload []byte) ([]byte, bool, error) {
	out, changed, err := redact.StreamJSON(payload)
	if err != nil {
		return nil, false, fmt.Errorf("webhook: redact: %w", err)
	}
	if changed {
		return out, true, nil
	}
	// Unchanged: still one encoding for every notification.
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, fmt.Errorf("webhook: redact: %w", err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, false, fmt.Errorf("webhook: redact: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), false, nil
}

// RedactText applies the string rules of docs/design/api.md#sse, then
// credentials, to one string.
func RedactText(s string) string { return redact.StreamString(s) }
