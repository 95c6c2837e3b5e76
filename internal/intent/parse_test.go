package intent

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

// obsMap is a fixed set of observation events for findings evidence.
type obsMap map[int64]string

func (m obsMap) Observation(seq int64) (string, bool, error) {
	c, ok := m[seq]
	return c, ok, nil
}

func parseErr(t *testing.T, raw string, opt Options) *Error {
	t.Helper()
	_, err := Parse(raw, opt)
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Parse(%q) error %T is not *Error", raw, err)
	}
	return e
}

func TestParseSpecCases(t *testing.T) {
	t.Parallel()
	obs := obsMap{3: "PermitRootLogin yes\nPasswordAuthentication yes"}
	cases := []struct {
		name, raw string
		code      verdict.Code // "" = allowed
		msg       string       // substring of the message
	}{
		// docs/design/checks.md#acceptance-cases #1
		{"1 unknown top key", `{"action":"read_file","params":{"path":"a"},"justification":"read it","system_prompt":"x"}`, verdict.SchemaUnknownKey, `$: unknown key "system_prompt" (allowed: action, params, justification, reasoning)`},
		// #2
		{"2 params is string", `{"action":"run_command","params":"ls","justification":"list files"}`, verdict.SchemaType, `$.params: expected object, got string`},
		{"2 justification null", `{"action":"read_file","params":{"path":"a"},"justification":null}`, verdict.SchemaType, `$.justification: expected string, got null`},
		// #3
		{"3 unknown action", `{"action":"delete_file","params":{"path":"a"},"justification":"delete it"}`, verdict.SchemaUnknownAction, `$.action: unknown action "delete_file" (allowed: run_command, read_file, http_get, complete, write_file)`},
		{"3 short justification", `{"action":"read_file","params":{"path":"a"},"justification":"ok"}`, verdict.SchemaJustificationShort, `$.justification: must be at least 5 visible characters (got 2; spaces, control, zero-width and bidi characters do not count)`},
		// #4
		{"4 complete without justification", `{"action":"complete"}`, "", ""},
		{"4 fenced read_file", "```json\n{\"action\":\"read_file\",\"params\":{\"path\":\"a\"},\"justification\":\"read it\"}\n```", "", ""},
		// #5
		{"5 duplicate action", `{"action":"read_file","action":"run_command","params":{"path":"a"},"justification":"read it"}`, verdict.SchemaDuplicateKey, `duplicate key "action"`},
		{"5 prose before", `Sure! {"action":"complete"}`, verdict.SchemaNotJSON, `$: not a single JSON object`},
		// #6
		{"6 extra param", `{"action":"run_command","params":{"command":"ls","timeout":5},"justification":"list files"}`, verdict.SchemaUnknownKey, `$.params: unknown key "timeout" for run_command (allowed: command)`},
		// #7
		{"7 high without evidence", `{"action":"complete","params":{"findings":[{"severity":"high","title":"t","evidence":"e","recommendation":"r","evidence_sequence":[]}]}}`, verdict.SchemaFindingInvalid, `high/critical finding needs evidence_sequence`},
		{"7 sequence not an observation", `{"action":"complete","params":{"findings":[{"severity":"high","title":"t","evidence":"e","recommendation":"r","evidence_sequence":[2]}]}}`, verdict.SchemaFindingUnverified, `sequence 2 is not an observation IronVise recorded from an action it executed`},
		// #8
		{"8 NUL in path", `{"action":"read_file","params":{"path":"a\u0000b"},"justification":"read it"}`, verdict.SchemaInvalidString, `$.params.path: contains NUL`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := parseErr(t, tc.raw, Options{MinJustification: 5, Observations: obs})
			if tc.code == "" {
				if e != nil {
					t.Fatalf("got %v; want allowed", e)
				}
				return
			}
			if e == nil {
				t.Fatalf("got allowed; want %s", tc.code)
			}
			if e.Code != tc.code || !strings.Contains(e.Error(), tc.msg) {
				t.Fatalf("got %s %q; want %s containing %q", e.Code, e.Error(), tc.code, tc.msg)
			}
		})
	}
}

func TestParseAdversarial(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40)
	cases := []struct {
		name, raw string
		code      verdict.Code
	}{
		{"case-folded key", `{"Action":"complete"}`, verdict.SchemaUnknownKey},
		{"escaped duplicate key", `{"action":"complete","act\u0069on":"run_command"}`, verdict.SchemaDuplicateKey},
		{"duplicate nested key", `{"action":"run_command","params":{"command":"ls","command":"rm -rf /"},"justification":"list files"}`, verdict.SchemaDuplicateKey},
		{"trailing second object", `{"action":"complete"}{"action":"run_command"}`, verdict.SchemaNotJSON},
		{"top-level array", `[{"action":"complete"}]`, verdict.SchemaNotJSON},
		{"empty", ``, verdict.SchemaNotJSON},
		{"missing action", `{"params":{}}`, verdict.SchemaMissingKey},
		{"missing command", `{"action":"run_command","params":{},"justification":"list files"}`, verdict.SchemaMissingKey},
		{"empty command", `{"action":"run_command","params":{"command":""},"justification":"list files"}`, verdict.SchemaInvalidString},
		{"action number", `{"action":1}`, verdict.SchemaType},
		{"null params", `{"action":"complete","params":null}`, verdict.SchemaType},
		{"invalid utf8", "{\"action\":\"complete\",\"reasoning\":\"\xff\"}", verdict.SchemaInvalidString},
		{"lone surrogate", `{"action":"complete","reasoning":"\ud800"}`, verdict.SchemaInvalidString},
		{"too deep", `{"action":"complete","reasoning":` + deep + `}`, verdict.SchemaNotJSON},
		{"url with space", `{"action":"http_get","params":{"url":"https://a.com/ x"},"justification":"fetch it"}`, verdict.SchemaInvalidString},
		{"url with control", `{"action":"http_get","params":{"url":"https://a.com/\u0007"},"justification":"fetch it"}`, verdict.SchemaInvalidString},
		{"findings not array", `{"action":"complete","params":{"findings":{}}}`, verdict.SchemaType},
		{"finding extra key", `{"action":"complete","params":{"findings":[{"severity":"low","title":"t","evidence":"e","recommendation":"r","cvss":9}]}}`, verdict.SchemaUnknownKey},
		{"finding bad severity", `{"action":"complete","params":{"findings":[{"severity":"urgent","title":"t","evidence":"e","recommendation":"r"}]}}`, verdict.SchemaFindingInvalid},
		{"finding float sequence", `{"action":"complete","params":{"findings":[{"severity":"low","title":"t","evidence":"e","recommendation":"r","evidence_sequence":[1.0]}]}}`, verdict.SchemaType},
		{"finding zero sequence", `{"action":"complete","params":{"findings":[{"severity":"low","title":"t","evidence":"e","recommendation":"r","evidence_sequence":[0]}]}}`, verdict.SchemaFindingInvalid},
		{"more quotes than sequences", `{"action":"complete","params":{"findings":[{"severity":"low","title":"t","evidence":"e","recommendation":"r","evidence_sequence":[3],"evidence_quotes":["a","b"]}]}}`, verdict.SchemaFindingInvalid},
		{"quote not in observation", `{"action":"complete","params":{"findings":[{"severity":"high","title":"t","evidence":"e","recommendation":"r","evidence_sequence":[3],"evidence_quotes":["PermitRootLogin no"]}]}}`, verdict.SchemaFindingUnverified},
		// A high finding must quote what it saw (issue 23 item 6).
		{"high finding empty quote", `{"action":"complete","params":{"findings":[{"severity":"high","title":"t","evidence":"e","recommendation":"r","evidence_sequence":[3],"evidence_quotes":[""]}]}}`, verdict.SchemaFindingUnverified},
		{"critical finding no quote", `{"action":"complete","params":{"findings":[{"severity":"critical","title":"t","evidence":"e","recommendation":"r","evidence_sequence":[3]}]}}`, verdict.SchemaFindingUnverified},
		{"whitespace-only justification", `{"action":"read_file","params":{"path":"a"},"justification":"      "}`, verdict.SchemaJustificationShort},
		{"fence without closing", "```json\n{\"action\":\"complete\"}\nmore", verdict.SchemaNotJSON},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := parseErr(t, tc.raw, Options{MinJustification: 5, Observations: obsMap{3: "PermitRootLogin yes"}})
			if e == nil || e.Code != tc.code {
				t.Fatalf("got %v; want %s", e, tc.code)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	rc := func(cmd string) string {
		return fmt.Sprintf(`{"action":"run_command","params":{"command":%q},"justification":"valid reason"}`, cmd)
	}
	pad := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		name string
		raw  string
		code verdict.Code
	}{
		{"command at 16 KiB", rc(pad(MaxCommandBytes)), ""},
		{"command over 16 KiB", rc(pad(MaxCommandBytes + 1)), verdict.SchemaInvalidString},
		{"raw at 64 KiB", `{"action":"complete","reasoning":"` + pad(MaxReasoningBytes) + `"}` + strings.Repeat(" ", MaxRawBytes-len(`{"action":"complete","reasoning":""}`)-MaxReasoningBytes), ""},
		{"raw over 64 KiB", strings.Repeat(" ", MaxRawBytes+1), verdict.SchemaTooLarge},
		{"reasoning over 16 KiB", `{"action":"complete","reasoning":"` + pad(MaxReasoningBytes+1) + `"}`, verdict.SchemaInvalidString},
		{"justification 2000 code points", `{"action":"complete","justification":"` + strings.Repeat("é", MaxJustificationRunes) + `"}`, ""},
		{"justification 2001 code points", `{"action":"complete","justification":"` + strings.Repeat("é", MaxJustificationRunes+1) + `"}`, verdict.SchemaInvalidString},
		{"justification exactly 5", `{"action":"read_file","params":{"path":"a"},"justification":"  abcde  "}`, ""},
		{"path 4096", `{"action":"read_file","params":{"path":"` + pad(MaxPathBytes) + `"},"justification":"read it"}`, ""},
		{"path 4097", `{"action":"read_file","params":{"path":"` + pad(MaxPathBytes+1) + `"},"justification":"read it"}`, verdict.SchemaInvalidString},
		{"url 2049", `{"action":"http_get","params":{"url":"https://a.com/` + pad(MaxURLBytes) + `"},"justification":"fetch it"}`, verdict.SchemaInvalidString},
		{"101 findings", `{"action":"complete","params":{"findings":[` + strings.TrimSuffix(strings.Repeat(`{"severity":"low","title":"t","evidence":"e","recommendation":"r"},`, MaxFindings+1), ",") + `]}}`, verdict.SchemaFindingInvalid},
		{"100 findings", `{"action":"complete","params":{"findings":[` + strings.TrimSuffix(strings.Repeat(`{"severity":"low","title":"t","evidence":"e","recommendation":"r"},`, MaxFindings), ",") + `]}}`, ""},
		{"depth 32", `{"action":"complete","reasoning":"x"` + `}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := parseErr(t, tc.raw, Options{MinJustification: 5})
			switch {
			case tc.code == "" && e != nil:
				t.Fatalf("got %v; want allowed", e)
			case tc.code != "" && (e == nil || e.Code != tc.code):
				t.Fatalf("got %v; want %s", e, tc.code)
			}
		})
	}
}

func TestParseDepthBoundary(t *testing.T) {
	t.Parallel()
	// The top object is depth 1; reasoning's value adds nesting.
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	ok := `{"action":"complete","params":{"findings":[]},"x":` + nest(MaxDepth-1) + `}`
	if e := parseErr(t, ok, Options{}); e == nil || e.Code != verdict.SchemaUnknownKey {
		t.Fatalf("depth %d: got %v; want the unknown-key error (decoding must succeed)", MaxDepth, e)
	}
	tooDeep := `{"action":"complete","x":` + nest(MaxDepth) + `}`
	if e := parseErr(t, tooDeep, Options{}); e == nil || e.Code != verdict.SchemaNotJSON {
		t.Fatalf("depth %d: got %v; want schema_not_json", MaxDepth+1, e)
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	in, err := Parse(`{"action":"complete","params":{"findings":[{"severity":"high","title":"root login","evidence":"e","recommendation":"r","evidence_sequence":[3],"evidence_quotes":["PermitRootLogin yes"]}]},"reasoning":"done"}`,
		Options{Observations: obsMap{3: "x\nPermitRootLogin yes\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Findings) != 1 || in.Findings[0].EvidenceSequence[0] != 3 || in.Reasoning != "done" {
		t.Fatalf("got %+v", in)
	}
	b, err := in.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"action":"complete","params":{"findings":[{"severity":"high","title":"root login","evidence":"e","recommendation":"r","evidence_sequence":[3],"evidence_quotes":["PermitRootLogin yes"]}]},"justification":"","reasoning":"done"}`
	if string(b) != want {
		t.Fatalf("MarshalJSON = %s; want %s", b, want)
	}
}

func TestStripFence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"  {\"a\":1}  ", `{"a":1}`},
		{"```json\n{\"a\":1}\n```", `{"a":1}`},
		{"```\n{\"a\":1}\n```\n", `{"a":1}`},
		{"```\r\n{\"a\":1}\r\n```", "{\"a\":1}\r"},
		{"```json", ""},
		{"```json\n{\"a\":1}", `{"a":1}`},
	} {
		if got := StripFence(tc.in); got != tc.want {
			t.Errorf("StripFence(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
