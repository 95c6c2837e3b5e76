package webhook_test

import (
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/webhook"
)

// TestRedactCredentials: a credential that reaches a notification, in a key
// docs/design/api.md#sse does not name or in free text, leaves as a
// placeholder; a session's tagged placeholder in the record reaches the SIEM
// whole.
func TestRedactCredentials(t *testing.T) {
	for _, c := range []struct {
		in     string
		secret string
		want   string
	}{
		{`{"content":"deploy with sk_live_4eC39HqLyjWDarjtT1zdp7dcXq now"}`, "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq", "[REDACTED:stripe-access-token]"},
		{`{"message":"AKIAZ7VQX3L4M5N6P2R4 denied"}`, "AKIAZ7VQX3L4M5N6P2R4", "[REDACTED:aws-access-token]"},
		{`{"command":"psql postgres://app:S3cr3t-Passw0rd@db/prod"}`, "S3cr3t-Passw0rd", "[REDACTED:url-password]"},
		{`{"content":"key [REDACTED:aws-access-token:hmac-sha256=5f1c0a9e2b7d3c41] token: x"}`, "", "[REDACTED:aws-access-token:hmac-sha256=5f1c0a9e2b7d3c41]"},
	} {
		got, changed, err := webhook.Redact([]byte(c.in))
		if err != nil || !changed {
			t.Fatalf("Redact(%s) = %s, %v, %v", c.in, got, changed, err)
		}
		if c.secret != "" && strings.Contains(string(got), c.secret) {
			t.Errorf("Redact(%s) = %s; the secret left", c.in, got)
		}
		if !strings.Contains(string(got), c.want) {
			t.Errorf("Redact(%s) = %s; want %s in it", c.in, got, c.want)
		}
	}
}
