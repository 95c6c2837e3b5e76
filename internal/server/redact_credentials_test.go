package server

import (
	"strings"
	"testing"
)

// TestRedactPayloadCredentials: the stream never carries a credential, in
// a key docs/design/api.md#sse does not name or in free text, and a payload
// that is not JSON is not passed through unread.
func TestRedactPayloadCredentials(t *testing.T) {
	in := `{"type":"observation","content":"AWS_ACCESS_KEY_ID=AKIAZ7VQX3L4M5N6P2R4\nSTRIPE=sk_live_4eC39HqLyjWDarjtT1zdp7dcXq\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1c3Kx3B0n1mK3w0Z0d1s2q3w4e5r6t7y8u9i0o1p2a3s4d5f\n-----END RSA PRIVATE KEY-----"}`
	out, changed := RedactPayload([]byte(in))
	if !changed {
		t.Fatalf("RedactPayload left %s unchanged", in)
	}
	for _, s := range []string{"AKIAZ7VQX3L4M5N6P2R4", "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq", "MIIEpAIBAAKCAQEA1c3Kx3B0n1mK3w0Z0d1s2q3"} {
		if strings.Contains(string(out), s) {
			t.Errorf("stream payload %s still holds %q", out, s)
		}
	}
	if out, changed := RedactPayload([]byte(`{"content": "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq`)); !changed || strings.Contains(string(out), "sk_live") {
		t.Errorf("an undecodable payload passed: %s", out)
	}
}
