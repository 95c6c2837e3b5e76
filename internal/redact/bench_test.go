package redact

import (
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/scanbench"
)

// sourceCode is 32 KiB of Go-like source full of the words the generic
// rules key on (key, token, auth, api, secret, password).
func sourceCode(size int) string {
	lines := []string{
		"func (r *Redactor) Token(key string) (string, error) {",
		"\tauth, err := r.client.Auth(ctx, key) // the api call",
		"\tif err != nil { return \"\", fmt.Errorf(\"auth %s: %w\", key, err) }",
		"\tsecret := auth.Secret()",
		"\tpassword := os.Getenv(\"DB_PASSWORD\")",
		"\tcfg := Config{APIKey: cfg.APIKey, Token: token, Timeout: 30 * time.Second}",
		"\treturn hex.EncodeToString(sum[:]), nil",
		"}",
	}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
	}
	return b.String()[:size]
}

// BenchmarkRedact32KiB: redaction runs on every observation before the
// scanner, inside the scanner's budget
// (docs/design/checks.md#scanner-pipeline: a 32 KiB benign observation in <
// 200 µs p50 at GOMAXPROCS=1, both together).
func BenchmarkRedact32KiB(b *testing.B) {
	r := ForSession("3f2a9c4e-1b2d-4c5e-8f90-000000000001")
	for _, tc := range []struct{ name, text string }{
		{"log", scanbench.BenignLog(32 << 10)},
		{"source", sourceCode(32 << 10)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if fs := r.Find(tc.text); len(fs) != 0 {
				b.Fatalf("benign text has findings %v", fs)
			}
			scanbench.P50(b, len(tc.text), func() { r.Find(tc.text) })
		})
	}
}

// BenchmarkRulesFirstRedact is what the first redactor of a process pays:
// build the embedded rule set as Default does and redact the tiny
// observation of a command that printed nothing.
func BenchmarkRulesFirstRedact(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		rs, err := compileConfig(gitleaksRules, gitleaksShapes, false)
		if err != nil {
			b.Fatal(err)
		}
		if _, reps := New(rs, nil).Redact("[exit 0]"); len(reps) != 0 {
			b.Fatalf("replacements %v", reps)
		}
	}
}
