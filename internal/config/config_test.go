package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mustLoad loads the configuration of the name/value pairs kv; an error
// ends the test.
func mustLoad(t *testing.T, kv ...string) *Config {
	t.Helper()
	env := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	c, err := Load(MapLookup(env))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantRejected checks that name=value (with HOME set) is refused with an
// *Error whose text holds want, and returns that error.
func wantRejected(t *testing.T, name, value, want string) error {
	t.Helper()
	_, err := Load(MapLookup(map[string]string{"HOME": "/h", name: value}))
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s=%q: got %v; want an error containing %q", name, value, err, want)
	}
	return err
}

func TestLoadDefaults(t *testing.T) {
	c := mustLoad(t, "HOME", "/home/u")
	if c.DataDir != "/home/u/.local/share/ironvise" || c.Scanner.Sensitivity != "medium" || c.Agent.MaxSteps != 20 || c.Agent.MaxStepsSet ||
		c.Agent.CheckDenialLimit != 5 || c.Agent.JustificationFailureLimit != 3 || c.Agent.GuardDenialLimit != 3 || c.Agent.LLMErrorLimit != 5 ||
		!c.Guard.Required || c.Guard.TimeoutSecs != 30 || c.LLM.Backend != "ollama" || c.LLM.OllamaModel != "mistral" || c.LLM.TimeoutSecs != 120 || c.Sandbox.Permissive {
		t.Fatalf("defaults: %+v", c)
	}
	c, _ = Load(MapLookup(map[string]string{"HOME": "/h", "XDG_DATA_HOME": "/x"}))
	if c.DataDir != "/x/ironvise" {
		t.Fatalf("XDG: %s", c.DataDir)
	}
	c, _ = Load(MapLookup(map[string]string{"ECTO_DATA_DIR": "/d", "AGENT_MAX_STEPS": "7", "GUARD_REQUIRED": "No"}))
	if c.DataDir != "/d" || c.Agent.MaxSteps != 7 || !c.Agent.MaxStepsSet || c.Guard.Required {
		t.Fatalf("overrides: %+v", c)
	}
}

func TestLoadErrorsNameVariableAndAcceptedValues(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"SCANNER_SENSITIVITY", "extreme", `SCANNER_SENSITIVITY="extreme": unknown value (accepted: low, medium, high)`},
		{"AGENT_MAX_STEPS", "0", `AGENT_MAX_STEPS="0": not an integer in range (accepted: 1 to 100000)`},
		{"AGENT_CHECK_DENIAL_LIMIT", "five", `AGENT_CHECK_DENIAL_LIMIT="five"`},
		{"GUARD_TIMEOUT_SECS", "-1", `GUARD_TIMEOUT_SECS="-1"`},
		{"LLM_TIMEOUT_SECS", "2m", `LLM_TIMEOUT_SECS="2m": not an integer in range (accepted: 1 to 3600)`},
		{"LLM_TIMEOUT_SECS", "0", `LLM_TIMEOUT_SECS="0": not an integer in range (accepted: 1 to 3600)`},
		{"LLM_TIMEOUT_SECS", "1.5", `LLM_TIMEOUT_SECS="1.5"`},
		{"LLM_BACKEND", "gpt", `LLM_BACKEND="gpt": unknown value (accepted: ollama, openai, anthropic, mock)`},
		{"ECTO_SANDBOX_PERMISSIVE", "yes", `ECTO_SANDBOX_PERMISSIVE="yes": unknown value (accepted: true, false, or unset)`},
		{"ECTO_SANDBOX_PERMISSIVE", "TRUE", `ECTO_SANDBOX_PERMISSIVE="TRUE"`},
		{"ECTO_SANDBOX_TIER", "vm", `ECTO_SANDBOX_TIER="vm"`},
		{"ECTO_DATA_DIR", "relative/dir", `ECTO_DATA_DIR="relative/dir": not an absolute path`},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			wantRejected(t, tc.name, tc.value, tc.want)
		})
	}
	_, err := Load(MapLookup(map[string]string{"HOME": "/h", "AGENT_MAX_STEPS": "x", "SCANNER_SENSITIVITY": "y"}))
	if err == nil || !strings.Contains(err.Error(), "AGENT_MAX_STEPS") || !strings.Contains(err.Error(), "SCANNER_SENSITIVITY") {
		t.Fatalf("all errors must be reported at once: %v", err)
	}
}

func TestGuardValidate(t *testing.T) {
	cases := []struct {
		env     map[string]string
		primary string
		wantErr string
		backend string
	}{
		{map[string]string{}, "ollama", "GUARD_LLM_BACKEND", ""},
		{map[string]string{"GUARD_LLM_BACKEND": "openai"}, "ollama", "GUARD_LLM_MODEL", ""},
		{map[string]string{"GUARD_LLM_BACKEND": "openai", "GUARD_LLM_MODEL": ""}, "ollama", "GUARD_LLM_MODEL", ""},
		{map[string]string{}, "mock", "", "mock"},
		{map[string]string{"GUARD_REQUIRED": "false"}, "ollama", "", ""},
		{map[string]string{"GUARD_LLM_BACKEND": "ollama", "GUARD_LLM_MODEL": "llama3"}, "openai", "", "ollama"},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			tc.env["HOME"] = "/h"
			c, err := Load(MapLookup(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			g, err := c.Guard.Validate(tc.primary)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got %v; want %q", err, tc.wantErr)
			}
			if err == nil && g.Backend != tc.backend {
				t.Fatalf("backend %q; want %q", g.Backend, tc.backend)
			}
		})
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := NewSecret("sk-very-secret")
	type hidden struct{ key Secret }
	for _, got := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s), fmt.Sprintf("%+v", LLM{OpenAIKey: s}),
		fmt.Sprintf("%v %+v %#v", hidden{s}, hidden{s}, hidden{s}), fmt.Sprintf("%v", []Secret{s})} {
		if strings.Contains(got, "very-secret") {
			t.Fatalf("secret leaked: %s", got)
		}
	}
	if s.Reveal() != "sk-very-secret" {
		t.Fatal("Reveal")
	}
}

func TestDotEnv(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".env")
	content := "# comment\nexport IRONVISE_TEST_A=from-file\nIRONVISE_TEST_B=\"quoted value\"\nIRONVISE_TEST_C='single'\n\n"
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("IRONVISE_TEST_A", "from-env")
	look, err := OSLookup(p)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := look("IRONVISE_TEST_A"); v != "from-env" {
		t.Errorf("env must win: %q", v)
	}
	if v, _ := look("IRONVISE_TEST_B"); v != "quoted value" {
		t.Errorf("B = %q", v)
	}
	if v, _ := look("IRONVISE_TEST_C"); v != "single" {
		t.Errorf("C = %q", v)
	}
	if err := os.WriteFile(p, []byte("NOT A LINE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OSLookup(p); err == nil || !strings.Contains(err.Error(), ".env:1") {
		t.Errorf("malformed .env: %v", err)
	}
	if _, err := OSLookup(filepath.Join(t.TempDir(), "missing")); err != nil {
		t.Errorf("missing .env must be fine: %v", err)
	}
}
