package redact_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/redact"
	"github.com/ironvise/ironvise/internal/server"
	"github.com/ironvise/ironvise/internal/webhook"
)

// TestDeliveryRedaction feeds each payload through both ways an event
// leaves the process — the SSE frame every stream receives and the JSON body
// of a webhook — and requires the same redaction from both: the same
// payload and the same "redacted" flag. want is the payload both must carry
// (compared as JSON values; an unchanged payload must also be byte for
// byte the stored one); gone are texts that must not survive in either.
func TestDeliveryRedaction(t *testing.T) {
	const undecodable = redact.UndecodablePayload
	longPath := "/home/user/projects/service/config/secrets.yaml"
	for _, c := range []struct {
		name, in, want string
		gone           []string
	}{
		// Addresses in the forms the two former redactors disagreed on.
		{"leading zeros", `{"c":"host 192.168.001.1 up"}`, `{"c":"host [REDACTED_IP] up"}`, nil},
		{"all leading zeros", `{"c":"010.000.000.001"}`, `{"c":"[REDACTED_IP]"}`, nil},
		{"version-like prefix", `{"c":"v1.2.3.4"}`, `{"c":"v[REDACTED_IP]"}`, nil},
		{"five dotted groups", `{"c":"1.2.3.4.5"}`, `{"c":"[REDACTED_IP]"}`, nil},
		{"quad inside longer run", `{"c":"999.10.0.0.7.999"}`, `{"c":"[REDACTED_IP]"}`, nil},
		{"sentence end", `{"c":"from 192.168.1.20. and 999.1.1.1"}`, `{"c":"from [REDACTED_IP]. and 999.1.1.1"}`, nil},
		{"with port", `{"c":"10.0.0.1:8080"}`, `{"c":"[REDACTED_IP]:8080"}`, nil},
		{"glued to words", `{"c":"host=db10.1.2.3x"}`, `{"c":"host=db[REDACTED_IP]x"}`, nil},
		{"escaped digits", `{"c":"\u0031\u0039\u0032.168.1.1"}`, `{"c":"[REDACTED_IP]"}`, nil},
		{"not an address: octet > 255", `{"c":"256.1.1.1"}`, `{"c":"256.1.1.1"}`, nil},
		{"not an address: three groups", `{"c":"version 1.2.3"}`, `{"c":"version 1.2.3"}`, nil},
		{"not an address: empty group", `{"c":"1..2.3"}`, `{"c":"1..2.3"}`, nil},
		// IPv6.
		{"ipv6 forms", `{"c":"v6 ::1 and 2001:db8::1 at 10:00:00"}`, `{"c":"v6 [REDACTED_IP] and [REDACTED_IP] at 10:00:00"}`, nil},
		{"ipv6 full and upper case", `{"c":"2001:0DB8:0000:0000:0000:FF00:0042:8329"}`, `{"c":"[REDACTED_IP]"}`, nil},
		{"ipv6 zone", `{"c":"fe80::1%eth0"}`, `{"c":"[REDACTED_IP]%eth0"}`, nil},
		{"ipv6 bracketed with port", `{"c":"[2001:db8::7]:443"}`, `{"c":"[[REDACTED_IP]]:443"}`, nil},
		{"ipv6 at sentence end", `{"c":"reached fe80::1."}`, `{"c":"reached [REDACTED_IP]."}`, nil},
		{"ipv6 glued to hex", `{"c":"abcdef:1::2"}`, `{"c":"[REDACTED_IP]"}`, nil},
		{"ipv4-mapped", `{"c":"::ffff:10.1.2.3"}`, "", []string{"10.1.2.3"}},
		{"mac address stays", `{"c":"12:34:56:78:9a:bc"}`, `{"c":"12:34:56:78:9a:bc"}`, nil},
		// Keys, assignments, paths.
		{"sensitive keys", `{"API_KEY":"sk-1","nested":{"Authorization":"Bearer x","ok":1.50}}`, `{"API_KEY":"[REDACTED]","nested":{"Authorization":"[REDACTED]","ok":1.50}}`, nil},
		{"sensitive key holding an object", `{"n":[1,2,{"secret_value":{"deep":true}}]}`, `{"n":[1,2,{"secret_value":"[REDACTED]"}]}`, nil},
		{"assignments", `{"content":"password: hunter2 and token=abc"}`, `{"content":"password: [REDACTED] and token=[REDACTED]"}`, nil},
		{"escaped key name", `{"c":"pass\u0077ord=hunter2"}`, `{"c":"password=[REDACTED]"}`, nil},
		{"long path", `{"c":"see ` + longPath + ` now"}`, `{"c":"see [REDACTED_PATH] now"}`, nil},
		{"short path stays", `{"c":"short /etc/passwd stays"}`, `{"c":"short /etc/passwd stays"}`, nil},
		// Secrets inside JSON strings and in member names.
		{"json inside a string", `{"c":"{\"password\":\"Tr0ub4dor&3\"}"}`, "", []string{"Tr0ub4dor"}},
		{"credentials in free text", `{"content":"AWS_ACCESS_KEY_ID=AKIAZ7VQX3L4M5N6P2R4\nSTRIPE=sk_live_4eC39HqLyjWDarjtT1zdp7dcXq"}`, "", []string{"AKIAZ7VQX3L4M5N6P2R4", "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq"}},
		{"credential in a url", `{"command":"psql postgres://app:S3cr3t-Passw0rd@db/prod"}`, "", []string{"S3cr3t-Passw0rd"}},
		{"pem block", `{"content":"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1c3Kx3B0n1mK3w0Z0d1s2q3w4e5r6t7y8u9i0o1p2a3s4d5f\n-----END RSA PRIVATE KEY-----"}`, "", []string{"MIIEpAIBAAKCAQEA1c3Kx3B0n1mK3w0Z0d1s2q3"}},
		{"address as a member name", `{"hosts":{"10.0.0.1":"up","10.0.0.2":"down"}}`, `{"hosts":{"[REDACTED_IP]":"up","[REDACTED_IP]#2":"down"}}`, nil},
		{"secret in a member name", `{"token=abc123":1,"AKIAZ7VQX3L4M5N6P2R4":2}`, "", []string{"abc123", "AKIAZ7VQX3L4M5N6P2R4"}},
		{"renamed member meets an existing one", `{"1.2.3.4":1,"[REDACTED_IP]":2}`, `{"[REDACTED_IP]":1,"[REDACTED_IP]#2":2}`, nil},
		{"session placeholder kept whole", `{"content":"key [REDACTED:aws-access-token:hmac-sha256=5f1c0a9e2b7d3c41] token: x"}`, `{"content":"key [REDACTED:aws-access-token:hmac-sha256=5f1c0a9e2b7d3c41] token: [REDACTED]"}`, nil},
		{"html characters kept", `{"c":"<a&b> 10.0.0.1"}`, `{"c":"<a&b> [REDACTED_IP]"}`, nil},
		{"already redacted", `{"password":"[REDACTED]"}`, `{"password":"[REDACTED]"}`, nil},
		{"plain payload", `{"content":"fine","n":1.50,"ok":true,"z":null}`, `{"content":"fine","n":1.50,"ok":true,"z":null}`, nil},
		// Payloads that cannot be read are replaced, never passed through.
		{"duplicate key hides a value", `{"password":"hunter2","password":"[REDACTED]"}`, undecodable, []string{"hunter2"}},
		{"duplicate key nested", `{"a":{"c":"x","c":"10.0.0.1"}}`, undecodable, []string{"10.0.0.1"}},
		{"trailing data", `{"a":1} token=abc 10.0.0.1`, undecodable, []string{"abc", "10.0.0.1"}},
		{"second document", `{"a":1}{"token":"abc"}`, undecodable, []string{"abc"}},
		{"truncated", `{"content": "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq`, undecodable, []string{"sk_live"}},
		{"not json", `password=hunter2 192.168.1.1`, undecodable, []string{"hunter2", "192.168"}},
		{"invalid utf-8", "{\"c\":\"\xff 10.0.0.1\"}", undecodable, []string{"10.0.0.1"}},
		{"unpaired surrogate", `{"c":"\ud800 10.0.0.1"}`, undecodable, []string{"10.0.0.1"}},
		{"too deep", strings.Repeat("[", 600) + `"10.0.0.1"` + strings.Repeat("]", 600), undecodable, []string{"10.0.0.1"}},
		{"empty", ``, undecodable, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := ledger.Event{LogIndex: 6, SessionID: uuid.MustParse("0b6c2c6e-1b0a-4b7e-9f3c-1d2e3f405162"), Seq: 3,
				Type: "observation", Payload: []byte(c.in), CreatedMicros: 1_780_000_000_000_000, Hash: ledger.Hash{1}}
			ssePayload, sseRedacted := sseDelivery(t, &ev)
			hookPayload, hookRedacted := webhookDelivery(t, &ev)
			if !sameJSON(ssePayload, hookPayload) || sseRedacted != hookRedacted {
				t.Fatalf("the deliveries disagree:\n stream  %s (redacted %v)\n webhook %s (redacted %v)", ssePayload, sseRedacted, hookPayload, hookRedacted)
			}
			if c.want != "" && !sameJSON(ssePayload, []byte(c.want)) {
				t.Errorf("payload %s\n    want %s", ssePayload, c.want)
			}
			for _, g := range c.gone {
				if bytes.Contains(ssePayload, []byte(g)) || bytes.Contains(hookPayload, []byte(g)) {
					t.Errorf("%q survived: %s", g, ssePayload)
				}
			}
			if unchanged := c.want == c.in; sseRedacted == unchanged {
				t.Errorf("redacted = %v for %s", sseRedacted, ssePayload)
			} else if unchanged && !bytes.Equal(ssePayload, []byte(c.in)) {
				t.Errorf("an unchanged payload was rewritten: %s", ssePayload)
			}
		})
	}
}

// sseDelivery returns the payload and the "redacted" member of the event's
// SSE frame.
func sseDelivery(t *testing.T, ev *ledger.Event) ([]byte, bool) {
	t.Helper()
	frame := server.SSEFrame(ev)
	_, data, ok := bytes.Cut(frame, []byte("\ndata: "))
	if !ok || !bytes.HasSuffix(data, []byte("\n\n")) {
		t.Fatalf("not an SSE frame: %q", frame)
	}
	var m struct {
		Payload  json.RawMessage `json:"payload"`
		Redacted bool            `json:"redacted"`
	}
	if err := json.Unmarshal(bytes.TrimSuffix(data, []byte("\n\n")), &m); err != nil {
		t.Fatalf("SSE data is not JSON: %v: %q", err, data)
	}
	return m.Payload, m.Redacted
}

// webhookDelivery returns the payload and "redacted" member of the event's
// JSON webhook body.
func webhookDelivery(t *testing.T, ev *ledger.Event) ([]byte, bool) {
	t.Helper()
	body, _, err := webhook.NewMessage(webhook.KindObservation, ev, "test").Render(webhook.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Payload  json.RawMessage `json:"payload"`
		Redacted bool            `json:"redacted"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("webhook body is not JSON: %v: %s", err, body)
	}
	return m.Payload, m.Redacted
}

// sameJSON reports whether a and b are the same JSON value, numbers
// compared by their text.
func sameJSON(a, b []byte) bool {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
