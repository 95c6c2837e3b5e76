package redact

import (
	"strings"
	"testing"
)

// TestJSONReadsStrictly: Redactor.JSON returns an unchanged document byte
// for byte, so it must read the same values any later reader does: a
// duplicate member, data after the document or invalid UTF-8 is an error,
// never a document passed on unread.
func TestJSONReadsStrictly(t *testing.T) {
	r := ForSession(testSession)
	for _, doc := range []string{
		`{"password":"Tr0ub4dor&3","password":"[REDACTED:key-value-secret]"}`,
		`{"a":{"note":"x","note":"AWS_ACCESS_KEY_ID=` + awsKeyID + `"}}`,
		`{"a":1} {"password":"Tr0ub4dor&3"}`,
		"{\"c\":\"\xff " + awsKeyID + "\"}",
	} {
		if out, _, err := r.JSON([]byte(doc)); err == nil {
			t.Errorf("JSON(%q) = %s; want an error", doc, out)
		}
	}
	out, changed, err := r.JSON([]byte(`{"z":1,"password":"Tr0ub4dor&3","a":[1.50,"` + awsKeyID + `"]}`))
	if err != nil || !changed || strings.Contains(string(out), "Tr0ub4dor") || strings.Contains(string(out), awsKeyID) || !strings.HasPrefix(string(out), `{"a":[1.50,`) {
		t.Fatalf("JSON = %s, %v, %v", out, changed, err)
	}
}
