package check

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ironvise/ironvise/internal/policy"
)

// benchIntents are run_command intents an ordinary coding agent writes;
// the target (issue acceptance) is the whole deterministic pipeline under
// 20 µs per intent.
var benchIntents = map[string]string{
	"test-and-cat":  `[ -f notes.txt ] && cat notes.txt | head -20`,
	"find-exec":     `find . -name '*.go' -exec grep -l TODO {} + 2>/dev/null | sort | uniq`,
	"git-log":       `git -c color.ui=never log --oneline -20 -- internal/ | head`,
	"curl-tar-make": `curl -fsSL https://example.com/x.tgz | tar -xz -C "$TMPDIR" && make -C . test`,
	"script":        `for f in *.md; do wc -l "$f"; done; if [ -d src ]; then ls -la src; fi`,
}

func benchRaw(b *testing.B, cmd string) string {
	b.Helper()
	raw, err := json.Marshal(map[string]any{"action": "run_command", "params": map[string]string{"command": cmd}, "justification": "valid reason"})
	if err != nil {
		b.Fatal(err)
	}
	return string(raw)
}

func BenchmarkPipelineIntents(b *testing.B) {
	tw := newTripwire(b)
	owasp, err := policy.Load("owasp-top10", policy.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, pol := range []struct {
		name string
		p    Policy
	}{{"no-policy", nil}, {"owasp", PolicyCheck(owasp)}} {
		for name, cmd := range benchIntents {
			raw := benchRaw(b, cmd)
			p := &Pipeline{Tripwire: tw, Policy: pol.p, GuardDisabled: "no guard configured"}
			ctx := context.Background()
			b.Run(pol.name+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.Run(ctx, Input{Raw: raw, Step: 1})
				}
			})
		}
	}
}
