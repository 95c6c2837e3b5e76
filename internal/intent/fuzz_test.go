package intent

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

func FuzzParse(f *testing.F) {
	seeds := []string{
		`{"action":"run_command","params":{"command":"ls -la"},"justification":"list files"}`, // plain valid intent
		"```json\n{\"action\":\"complete\"}\n```",                                             // fenced reply
		`{"action":"complete","params":{"findings":[{"severity":"high","title":"t","evidence":"e","recommendation":"r","evidence_sequence":[1],"evidence_quotes":["x"]}]}}`, // findings with evidence
		`{"action":"read_file","action":"x"}`,                                           // duplicate key
		`{"action":"read_file","params":{"path":"a\u0000b"},"justification":"read it"}`, // NUL escape
		`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,     // nesting past the limit
		`{"action":"complete","reasoning":"\ud800\udc00"}`,                              // surrogate pair (valid)
		`{"action":"complete","reasoning":"\ud800"}`,                                    // lone surrogate
		`{"action":"complete"} trailing`,                                                // trailing data
		"\xff\xfe",                                                                      // invalid UTF-8
		`{"action":"complete","params":{"findings":[{"evidence_sequence":[1e3]}]}}`,     // exponent number form
	}
	for _, s := range seeds {
		f.Add(s)
	}
	obs := obsMap{1: "x"}
	f.Fuzz(func(t *testing.T, raw string) {
		in, err := Parse(raw, Options{MinJustification: 5, Observations: obs})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code == "" || e.Path == "" {
				t.Fatalf("error without code or path: %v", err)
			}
			return
		}
		// Invariants of an accepted intent: a known action, valid UTF-8
		// strings, and a JSON form that parses back to the same intent.
		if !in.Action.Known() || !utf8.ValidString(in.Target()) {
			t.Fatalf("accepted invalid intent %+v", in)
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := Parse(string(b), Options{MinJustification: 5, Observations: obs})
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if again.Target() != in.Target() || again.Justification != in.Justification || len(again.Findings) != len(in.Findings) {
			t.Fatalf("round trip changed intent: %+v vs %+v", in, again)
		}
	})
}
