package redact

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRedact checks the redactor on any text: no panic, placeholders where
// it says they are, valid UTF-8 kept valid, and redacting twice changes
// nothing (the agent redacts event payloads that may already hold
// placeholders).
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"",                                      // empty text
		"AWS_ACCESS_KEY_ID=" + awsKeyID,         // a gitleaks rule with an allowlist
		"postgres://u:" + dbPassword + "@h/db",  // url-password
		"postgres://u:p@ss@h/db",                // '@' inside the password
		"DB_PASSWORD=hunter2 x",                 // key-value-secret
		"password: ",                            // assignment with no value
		"Authorization: Bearer",                 // scheme with no credential
		pemKey,                                  // a whole PEM block
		"-----BEGIN PRIVATE KEY-----",           // a header alone
		"-----BEGIN PRIVATE KEY-----\\nQUJD\\n", // a cut block with escaped newlines
		jwtToken,                                // JWT
		"eyJ.eyJ.",                              // a JWT shape too short to decode
		"[REDACTED:aws-access-token:hmac-sha256=", // a cut placeholder
		"\xff\xfe password=\xc3",                  // invalid UTF-8 around a key
		strings.Repeat("key=", 300),               // many keyword occurrences
		"sk" + strings.Repeat("0", 32),            // an expanded short keyword (twilio)
		"s.abcdefghijklmnopqrstuvwx",              // an expanded short keyword (vault)
		"abc1q~" + strings.Repeat("a", 34),        // an expanded short keyword (azure)
	} {
		f.Add(s)
	}
	r := ForSession(testSession)
	f.Fuzz(func(t *testing.T, text string) {
		out, reps := r.Redact(text)
		for _, p := range reps {
			if p.Start < 0 || p.End > len(out) || !strings.HasPrefix(out[p.Start:p.End], PlaceholderPrefix) || !strings.HasSuffix(out[p.Start:p.End], "]") {
				t.Fatalf("replacement %+v is not a placeholder in %q", p, out)
			}
		}
		if utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("valid UTF-8 %q became invalid %q", text, out)
		}
		if again := r.String(out); again != out {
			t.Fatalf("redacting twice changed %q to %q", out, again)
		}
		// The scanner hands its own lowercased copy to FindLowered; the
		// findings must be those of Find.
		lower := []byte(text)
		for i, c := range lower {
			if c >= 'A' && c <= 'Z' {
				lower[i] = c + 'a' - 'A'
			}
		}
		if got, want := r.FindLowered(text, lower), r.Find(text); !slices.Equal(got, want) {
			t.Fatalf("FindLowered(%q) = %v, Find = %v", text, got, want)
		}
	})
}

// FuzzPayload: the redaction of a payload for the stream and webhooks
// never fails; its output is always JSON, is the input byte for byte when
// reported unchanged, and holds no value of a secret-named member.
func FuzzPayload(f *testing.F) {
	f.Add([]byte(`{"content":"token=abc sk_live_4eC39HqLyjWDarjtT1zdp7dcXq"}`)) // both rule sets
	f.Add([]byte(`{"password":{"nested":[1]}}`))                                // a secret-named key holding an object
	f.Add([]byte(`[1, "10.0.0.1", null]`))                                      // a non-object document
	f.Add([]byte(`{"n":1e400}`))                                                // number outside float range
	f.Add([]byte(`{"s":"fe80::1%eth0 ::ffff:1.2.3.4 12:34:56:78:9a:bc:de"}`))   // v6 forms
	f.Add([]byte(`{"10.0.0.1":1,"[REDACTED_IP]":2}`))                           // member names that redact alike
	f.Fuzz(func(t *testing.T, doc []byte) {
		out, changed := Payload(doc)
		if !changed {
			if string(out) != string(doc) {
				t.Fatal("unchanged document rewritten")
			}
			return
		}
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("invalid JSON out: %q", out)
		}
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, val := range x {
					if streamKey(k) && val != StreamRedacted {
						t.Fatalf("key %q kept %v", k, val)
					}
					walk(val)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(v)
	})
}
