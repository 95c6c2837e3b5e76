package guard

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const goodRequest = `{"nonce":3,"ts_ms":1700000000000,"session_id":"s-1","step":2,"goal":"audit the web app",` +
	`"intent":{"action":"run_command","params":{"command":"ls -la"},"justification":"list files","reasoning":""},"flags":["dynamic_program"]}`

func TestDecodeRequest(t *testing.T) {
	r, err := decodeRequest([]byte(goodRequest))
	if err != nil {
		t.Fatalf("decodeRequest: %v", err)
	}
	if r.Nonce != 3 || r.TsMs != 1700000000000 || r.SessionID != "s-1" || r.Step != 2 || r.Goal != "audit the web app" ||
		r.Intent.Action != "run_command" || string(r.Intent.Params) != `{"command":"ls -la"}` || r.Intent.Justification != "list files" ||
		len(r.Flags) != 1 || r.Flags[0] != "dynamic_program" {
		t.Fatalf("decoded %+v", r)
	}
}

// mutator returns a function that replaces old with new once in doc; a
// mutation that does not apply is a broken test.
func mutator(doc string) func(old, new string) string {
	return func(old, new string) string {
		if !strings.Contains(doc, old) {
			panic("test mutation does not apply: " + old)
		}
		return strings.Replace(doc, old, new, 1)
	}
}

func TestDecodeRequestStrict(t *testing.T) {
	mut := mutator(goodRequest)
	cases := []struct{ name, in string }{
		{"unknown key", mut(`"step":2`, `"step":2,"observation":"x"`)},
		{"case-folded key", mut(`"nonce":3`, `"Nonce":3`)},
		{"duplicate key", mut(`"step":2`, `"step":2,"step":3`)},
		{"missing key", mut(`"goal":"audit the web app",`, ``)},
		{"null goal", mut(`"goal":"audit the web app"`, `"goal":null`)},
		{"negative nonce", mut(`"nonce":3`, `"nonce":-3`)},
		{"fractional nonce", mut(`"nonce":3`, `"nonce":3.0`)},
		{"exponent nonce", mut(`"nonce":3`, `"nonce":3e0`)},
		{"nonce overflow", mut(`"nonce":3`, `"nonce":18446744073709551616`)},
		{"string step", mut(`"step":2`, `"step":"2"`)},
		{"negative step", mut(`"step":2`, `"step":-1`)},
		{"intent extra key", mut(`"reasoning":""`, `"reasoning":"","system_prompt":"x"`)},
		{"intent null reasoning", mut(`"reasoning":""`, `"reasoning":null`)},
		{"params not object", mut(`"params":{"command":"ls -la"}`, `"params":"ls"`)},
		{"flags null", mut(`"flags":["dynamic_program"]`, `"flags":null`)},
		{"flag not string", mut(`"flags":["dynamic_program"]`, `"flags":[1]`)},
		{"trailing data", goodRequest + `{}`},
		{"invalid utf-8", mut(`audit`, "aud\xffit")},
		{"not object", `[]`},
		{"too deep", mut(`{"command":"ls -la"}`, strings.Repeat(`{"a":`, 40)+`1`+strings.Repeat(`}`, 40))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeRequest([]byte(tc.in)); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

const goodResponse = `{"nonce":3,"verdict":"DENY","reason":"off goal","raw":"DENY: off goal","model":"m","latency_ms":12}`

func TestDecodeResponse(t *testing.T) {
	r, err := decodeResponse([]byte(goodResponse))
	if err != nil || r.Nonce != 3 || r.Verdict != VerdictDeny || r.Reason != "off goal" || r.LatencyMs != 12 || r.Error != "" {
		t.Fatalf("decodeResponse = %+v, %v", r, err)
	}
	withErr := strings.Replace(goodResponse, `"latency_ms":12`, `"latency_ms":12,"error":"bad_mac"`, 1)
	if r, err := decodeResponse([]byte(withErr)); err != nil || r.Error != ErrCodeBadMAC {
		t.Fatalf("with error: %+v, %v", r, err)
	}
	// The worker's own encoding round-trips.
	b, _ := json.Marshal(Response{Nonce: 1, Verdict: VerdictAllow, Reason: strings.Repeat("é", MaxReasonRunes), Raw: strings.Repeat("x", MaxRawBytes)})
	if _, err := decodeResponse(b); err != nil {
		t.Fatalf("limits exactly reached: %v", err)
	}
}

func TestDecodeResponseStrict(t *testing.T) {
	mut := mutator(goodResponse)
	cases := []struct{ name, in string }{
		{"lowercase verdict", mut(`"DENY"`, `"deny"`)},
		{"other verdict", mut(`"DENY"`, `"MAYBE"`)},
		{"unknown key", mut(`"model":"m"`, `"model":"m","confidence":1`)},
		{"missing raw", mut(`"raw":"DENY: off goal",`, ``)},
		{"empty error", mut(`"latency_ms":12`, `"latency_ms":12,"error":""`)},
		{"null error", mut(`"latency_ms":12`, `"latency_ms":12,"error":null`)},
		{"negative latency", mut(`"latency_ms":12`, `"latency_ms":-1`)},
		{"reason too long", mut(`"reason":"off goal"`, `"reason":"`+strings.Repeat("x", MaxReasonRunes+1)+`"`)},
		{"raw too long", mut(`"raw":"DENY: off goal"`, `"raw":"`+strings.Repeat("x", MaxRawBytes+1)+`"`)},
		{"duplicate verdict", mut(`"verdict":"DENY"`, `"verdict":"DENY","verdict":"ALLOW"`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeResponse([]byte(tc.in)); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}
