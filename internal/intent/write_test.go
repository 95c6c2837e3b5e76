package intent

import (
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

func TestWriteFileSchema(t *testing.T) {
	t.Parallel()
	sha := strings.Repeat("ab", 32)
	ok := `{"action":"write_file","params":{"path":"src/a.go","content_sha256":"` + sha + `","content_bytes":12},"justification":"fix the bug"}`
	in, err := Parse(ok, Options{MinJustification: 5})
	if err != nil {
		t.Fatal(err)
	}
	if in.Path != "src/a.go" || in.Write == nil || in.Write.SHA256 != sha || in.Write.Bytes == nil || *in.Write.Bytes != 12 {
		t.Fatalf("parsed %+v (write %+v)", in, in.Write)
	}
	p := in.Params()
	if p["path"] != "src/a.go" || p["content_sha256"] != sha || p["content_bytes"] != int64(12) || len(p) != 3 {
		t.Fatalf("params %v", p)
	}
	if in, err := Parse(`{"action":"write_file","params":{"path":"a"},"justification":"write it"}`, Options{}); err != nil || in.Write != nil || len(in.Params()) != 1 {
		t.Fatalf("path only: %v %+v", err, in)
	}
	cases := []struct {
		name, raw string
		opt       Options
		code      verdict.Code
		msg       string
	}{
		{"content is never taken", `{"action":"write_file","params":{"path":"a","content":"secret"},"justification":"write it"}`, Options{}, verdict.SchemaUnknownKey, `unknown key "content"`},
		{"missing path", `{"action":"write_file","params":{},"justification":"write it"}`, Options{}, verdict.SchemaMissingKey, "$.params.path"},
		{"upper-case hash", `{"action":"write_file","params":{"path":"a","content_sha256":"` + strings.ToUpper(sha) + `"},"justification":"write it"}`, Options{}, verdict.SchemaInvalidString, "64 lowercase hex"},
		{"short hash", `{"action":"write_file","params":{"path":"a","content_sha256":"abc"},"justification":"write it"}`, Options{}, verdict.SchemaInvalidString, "64 lowercase hex"},
		{"negative size", `{"action":"write_file","params":{"path":"a","content_bytes":-1},"justification":"write it"}`, Options{}, verdict.SchemaInvalidString, "content_bytes"},
		{"fractional size", `{"action":"write_file","params":{"path":"a","content_bytes":1.5},"justification":"write it"}`, Options{}, verdict.SchemaInvalidString, "content_bytes"},
		{"size as string", `{"action":"write_file","params":{"path":"a","content_bytes":"1"},"justification":"write it"}`, Options{}, verdict.SchemaType, "content_bytes"},
		{"short justification", `{"action":"write_file","params":{"path":"a"},"justification":"x"}`, Options{MinJustification: 5}, verdict.SchemaJustificationShort, ""},
		{"refused where IronVise executes", ok, Options{NoWrite: true}, verdict.SchemaUnknownAction, "IronVise runs no writes"},
	}
	for _, tc := range cases {
		e := parseErr(t, tc.raw, tc.opt)
		if e == nil || e.Code != tc.code || !strings.Contains(e.Error(), tc.msg) {
			t.Errorf("%s: got %v; want %s containing %q", tc.name, e, tc.code, tc.msg)
		}
	}
}
