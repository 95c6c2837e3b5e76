package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/intent"
)

// TestCheckGuardNotConfigured: without a guard, check says so in the
// verdict and on stderr, and denies when a guard was asked for (item 9).
func TestCheckGuardNotConfigured(t *testing.T) {
	ws := t.TempDir()
	in := `{"action":"run_command","params":{"command":"ls -la"},"justification":"list files"}`
	cases := []struct {
		name     string
		env      []string
		args     []string
		code     int
		decision string
		vc       string
		warn     bool
	}{
		{"unset, none configured", nil, nil, 0, "allow", "guard_not_configured", true},
		{"--require-guard", nil, []string{"--require-guard"}, 1, "deny", "guard_not_configured", false},
		{"explicit GUARD_REQUIRED=true", []string{"GUARD_REQUIRED", "true"}, nil, 1, "deny", "guard_not_configured", false},
		{"explicit GUARD_REQUIRED=Yes", []string{"GUARD_REQUIRED", "Yes"}, nil, 1, "deny", "guard_not_configured", false},
		{"GUARD_REQUIRED=false", []string{"GUARD_REQUIRED", "false"}, nil, 0, "allow", "guard_disabled", false},
		{"GUARD_REQUIRED=false with --require-guard", []string{"GUARD_REQUIRED", "false"}, []string{"--require-guard"}, 1, "deny", "guard_not_configured", false},
		{"configured guard with --require-guard", []string{"LLM_BACKEND", "mock", "GUARD_LLM_BACKEND", "mock", "GUARD_LLM_MODEL", "mock-v1", "GUARD_MOCK_REPLY", "ALLOW"},
			[]string{"--require-guard"}, 0, "allow", "guard_allow", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := cliEnv(t, tc.env...)
			code, out, errOut := runCLI(t, env, in, append([]string{"check", "--workspace", ws}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d; want %d\n%s\n%s", code, tc.code, out, errOut)
			}
			var v struct{ Decision, Check, Code, Message string }
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("stdout is not verdict JSON: %v\n%s", err, out)
			}
			if v.Decision != tc.decision || v.Check != "guard" || v.Code != tc.vc {
				t.Fatalf("got %s %s %s (%s); want %s guard %s", v.Decision, v.Check, v.Code, v.Message, tc.decision, tc.vc)
			}
			warned := strings.Contains(errOut, "no guard reviewed this intent") && strings.Contains(errOut, "GUARD_LLM_BACKEND")
			if warned != tc.warn {
				t.Fatalf("stderr warning %v; want %v:\n%s", warned, tc.warn, errOut)
			}
		})
	}
}

// TestCheckOneSizeLimit: stdin over the intent limit gets the schema's
// one message, whatever its size (item 8).
func TestCheckOneSizeLimit(t *testing.T) {
	ws := t.TempDir()
	want := intent.TooLarge(-1).Error()
	for name, in := range map[string]string{
		"just over 64 KiB": `{"action":"complete","reasoning":"` + strings.Repeat("a", intent.MaxRawBytes) + `"}`,
		"over 1 MiB":       strings.Repeat(" ", 2<<20),
	} {
		t.Run(name, func(t *testing.T) {
			code, out, _ := runCLI(t, cliEnv(t), in, "check", "--workspace", ws)
			var v struct{ Code, Message string }
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatal(err)
			}
			if code != 1 || v.Code != "schema_too_large" || v.Message != want {
				t.Fatalf("exit %d %s %q; want 1 schema_too_large %q", code, v.Code, v.Message, want)
			}
			if strings.Contains(v.Message, "1048576") {
				t.Fatalf("message names a second limit: %q", v.Message)
			}
		})
	}
}
