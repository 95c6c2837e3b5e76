//go:build linux

package cli

import (
	"strings"
	"testing"
)

// TestNextStepsNameTheBinaryRun: the next steps exec and an audit print
// after a session name ./bin/ironvise when that is what was run and a
// different ironvise is on PATH.
func TestNextStepsNameTheBinaryRun(t *testing.T) {
	pathDir, _, built := hintBins(t)
	env := cliEnv(t, "PATH", pathDir, "DATABASE_URL", "")

	code, _, errOut := runAs(t, env, built, "exec", "--workspace", t.TempDir(), "--", "true")
	if code != 0 || !strings.Contains(errOut, "(verify: "+built+" verify-session ") {
		t.Fatalf("exec: exit %d, stderr %q; want the verify hint to name %s", code, errOut, built)
	}

	code, out, errOut := runAs(t, env, built, "demo")
	id := wordAfter(t, out, "verify: "+built+" verify-session ")
	if code != 0 || !strings.Contains(out, "export: "+built+" report "+id+" --format html --output report.html") {
		t.Fatalf("demo: exit %d; want the verify and export hints to name %s\n%s\n%s", code, built, out, errOut)
	}
}
