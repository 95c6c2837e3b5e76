package server

import "testing"

// TestBodyObjectIsStrict: a JSON object body is read strictly; a duplicate
// key (the last value silently won: {"role":"auditor","role":"admin"} made
// an admin token) is refused like any body that is not one JSON object.
func TestBodyObjectIsStrict(t *testing.T) {
	ts := startServer(t, tsOptions{})
	for _, body := range []string{
		`{"role":"auditor","role":"admin"}`,
		`{"role":"auditor","label":"a","label":"b"}`,
		`{"role":"auditor"}]`,
	} {
		if r := ts.call("POST", "/api/tokens", adminTok, body, "Content-Type", "application/json"); r.status != 422 && r.status != 400 {
			t.Errorf("POST /api/tokens %s: %d %s; want it refused", body, r.status, r.body)
		}
	}
	if r := ts.call("POST", "/api/tokens", adminTok, `{"role":"auditor"}`, "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("a plain body: %d %s", r.status, r.body)
	}
}
