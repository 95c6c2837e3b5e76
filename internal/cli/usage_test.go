package cli

import (
	"strings"
	"testing"
)

// TestUsageHint gives the usage hint to command lines cobra rejects, and
// not to errors a command returns itself: the two are told apart by type,
// so a command's message that happens to contain "arg(s)" or "unknown
// flag" gets no hint, and a cobra message worded differently still does.
func TestUsageHint(t *testing.T) {
	const hint = "Run 'ironvise --help' for usage."
	ws := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		hint bool
	}{
		{"unknown command", []string{"frobnicate"}, true},
		{"unknown flag", []string{"check", "--bogus"}, true},
		{"unknown shorthand flag", []string{"check", "-Z"}, true},
		{"flag without its value", []string{"check", "--policy"}, true},
		{"too many arguments", []string{"version", "extra"}, true},
		{"missing argument", []string{"audit"}, true},
		{"missing required flag", []string{"diff-audit"}, true},
		{"command's own error", []string{"check", "--workspace", ws, "--policy-sha256", "00"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, cliEnv(t), `{}`, tc.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d; want %d (stderr %q)", code, ExitUsage, errOut)
			}
			if got := strings.Contains(errOut, hint); got != tc.hint {
				t.Fatalf("usage hint shown: %v; want %v (stderr %q)", got, tc.hint, errOut)
			}
		})
	}
}
