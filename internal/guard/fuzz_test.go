package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzOpenEnvelope feeds arbitrary lines to the envelope check, as a peer
// with pipe access could. It must never panic, and must accept a line only
// when the MAC over the exact payload bytes verifies.
func FuzzOpenEnvelope(f *testing.F) {
	valid := seal(testKey, RequestLabel, []byte(goodRequest))
	f.Add(valid[:len(valid)-1])                                                                        // an authentic request
	f.Add(badMAC(valid)[:len(valid)-1])                                                                // one MAC digit flipped
	f.Add(bytes.Replace(valid[:len(valid)-1], []byte(`"payload"`), []byte(`"Payload"`), 1))            // case-folded key
	f.Add([]byte(`{"payload":{},"payload":{},"mac":"` + string(bytes.Repeat([]byte("0"), 64)) + `"}`)) // duplicate payload
	f.Add([]byte(`{"payload":{"a":"\ud800"},"mac":""}`))                                               // lone surrogate escape
	f.Add([]byte("{\"payload\":{},\"mac\":\"\xff\"}"))                                                 // invalid UTF-8
	f.Add([]byte(`{"mac":"00","payload":[]}`))                                                         // wrong order, array payload
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, label := range []string{RequestLabel, ResponseLabel} {
			payload, err := open(testKey, label, line)
			if err != nil {
				if !errors.Is(err, ErrBadMAC) && !errors.Is(err, ErrMalformed) {
					t.Fatalf("unexpected error class: %v", err)
				}
				continue
			}
			// Accepted: the payload is an object and its MAC verifies.
			if payload[0] != '{' || !bytes.Contains(line, payload) {
				t.Fatalf("accepted payload %q not taken from the line", payload)
			}
			if !bytes.Contains(line, []byte(`"`+string(hexMAC(testKey, label, payload))+`"`)) {
				t.Fatalf("accepted a line whose MAC is not over the payload bytes")
			}
		}
	})
}

func hexMAC(key []byte, label string, payload []byte) []byte {
	line := seal(key, label, payload)
	i := bytes.LastIndex(line, []byte(`"mac":"`)) + len(`"mac":"`)
	return line[i : i+64]
}

// FuzzDecodePayload feeds arbitrary authenticated payloads to the strict
// decoders: a compromised-but-keyed peer. Decoding must never panic, and
// whatever decodes must survive a re-encode unchanged (no field silently
// dropped or coerced).
func FuzzDecodePayload(f *testing.F) {
	f.Add([]byte(goodRequest))                                                                                                                                                                      // a valid request
	f.Add([]byte(goodResponse))                                                                                                                                                                     // a valid response
	f.Add([]byte(`{"nonce":1,"nonce":2}`))                                                                                                                                                          // duplicate key
	f.Add([]byte(`{"nonce":1e2,"verdict":"ALLOW","reason":"","raw":"","model":"","latency_ms":0}`))                                                                                                 // exponent number
	f.Add([]byte(`{"nonce":1,"verdict":"ALLOW","reason":"","raw":"","model":"","latency_ms":0,"error":"x"}`))                                                                                       // allow with error
	f.Add([]byte(`{"nonce":18446744073709551615,"ts_ms":-9223372036854775808,"session_id":"","step":0,"goal":"","intent":{"action":"","params":{},"justification":"","reasoning":""},"flags":[]}`)) // extreme integers
	f.Fuzz(func(t *testing.T, raw []byte) {
		if req, err := decodeRequest(raw); err == nil {
			b, err := json.Marshal(req)
			if err != nil {
				t.Fatalf("re-encode request: %v", err)
			}
			again, err := decodeRequest(b)
			if err != nil || !reflect.DeepEqual(normalise(req), normalise(again)) {
				t.Fatalf("request does not round-trip: %+v vs %+v (%v)", req, again, err)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("unexpected error class: %v", err)
		}
		if resp, err := decodeResponse(raw); err == nil {
			b, _ := json.Marshal(resp)
			again, err := decodeResponse(b)
			if err != nil || again != resp {
				t.Fatalf("response does not round-trip: %+v vs %+v (%v)", resp, again, err)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("unexpected error class: %v", err)
		}
	})
}

// normalise re-encodes params canonically (sorted keys, one escaping
// style, numbers as written) so that only a change of meaning counts.
func normalise(r Request) Request {
	dec := json.NewDecoder(bytes.NewReader(r.Intent.Params))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic(err)
	}
	r.Intent.Params, _ = json.Marshal(v)
	return r
}
