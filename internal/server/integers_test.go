package server

import (
	"strings"
	"testing"
)

// TestIntegerFieldsRefuseStrings is issue 13 item 8 for every integer
// field of every request body: a quoted number, a fraction or an exponent
// is a 422 naming the field; the plain number is taken.
func TestIntegerFieldsRefuseStrings(t *testing.T) {
	ts := startServer(t, tsOptions{})
	fields := []struct {
		method, path, field string
		ok                  any
		extra               map[string]any
	}{
		{"PUT", "/api/config", "max_steps", 5, nil},
		{"POST", "/api/tokens", "expires_in_days", 30, map[string]any{"role": "auditor"}},
		{"PUT", "/api/tripwire", "min_justification_length", 12, nil},
	}
	for _, f := range fields {
		for _, bad := range []string{`"5"`, `"30"`, `5.0`, `1e1`, `true`, `[5]`} {
			body := `{"` + f.field + `":` + bad
			for k, v := range f.extra {
				body += `,"` + k + `":"` + v.(string) + `"`
			}
			body += "}"
			r := ts.call(f.method, f.path, adminTok, body, "Content-Type", "application/json")
			if r.status != 422 || !strings.Contains(string(r.body), f.field) {
				t.Errorf("%s %s %s: %d %s; want 422 naming the field", f.method, f.path, body, r.status, r.body)
			}
		}
		body := map[string]any{f.field: f.ok}
		for k, v := range f.extra {
			body[k] = v
		}
		if r := ts.call(f.method, f.path, adminTok, body); r.status != 200 {
			t.Errorf("%s %s %v: %d %s; want 200", f.method, f.path, body, r.status, r.body)
		}
	}
}
