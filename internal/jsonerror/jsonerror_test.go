package jsonerror

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestWrite(t *testing.T) {
	seq := int64(3)
	for name, tc := range map[string]struct {
		f    Failure
		want string
	}{
		"bare": {Failure{OK: true, Command: "version", Error: Detail{Kind: KindUsage, Code: 2, Message: "m"}},
			`{"ok":false,"command":"version","error":{"kind":"usage","code":2,"message":"m"}}`},
		"verification": {Failure{Command: "verify-session", SessionID: "s", Error: Detail{Kind: KindVerification, Code: 1, Message: "m", Check: "chain", Sequence: &seq, Problem: "p"}},
			`{"ok":false,"command":"verify-session","session_id":"s","error":{"kind":"verification","code":1,"message":"m","check":"chain","sequence":3,"problem":"p"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tc.f); err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, b.Bytes()); err != nil || compact.String() != tc.want {
				t.Errorf("got %s (%v); want %s", compact.String(), err, tc.want)
			}
		})
	}
	if KindOfCode(1) != KindFailed || KindOfCode(2) != KindError || KindOfCode(125) != KindError {
		t.Error("KindOfCode")
	}
}
