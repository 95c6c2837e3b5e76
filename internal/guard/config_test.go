package guard

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/verdict"
)

func loadConfig(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	if _, ok := env["HOME"]; !ok {
		env["HOME"] = t.TempDir()
	}
	cfg, err := config.Load(config.MapLookup(env))
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	return cfg
}

// TestCase48 is docs/design/checks.md#acceptance-cases case 48 at the level
// this package exposes: Resolve is what audit and serve call at startup.
func TestCase48(t *testing.T) {
	t.Run("GUARD_REQUIRED unset, empty GUARD_LLM_MODEL: startup error", func(t *testing.T) {
		cfg := loadConfig(t, map[string]string{"GUARD_LLM_BACKEND": "ollama", "GUARD_LLM_MODEL": ""})
		_, err := Resolve(cfg.Guard, cfg.LLM.Backend, Flags{})
		if err == nil || !strings.Contains(err.Error(), "GUARD_LLM_MODEL") {
			t.Fatalf("err = %v, want a startup error naming GUARD_LLM_MODEL", err)
		}
	})
	t.Run("GUARD_REQUIRED=No: guard skip guard_disabled", func(t *testing.T) {
		cfg := loadConfig(t, map[string]string{"GUARD_REQUIRED": "No"})
		plan, err := Resolve(cfg.Guard, cfg.LLM.Backend, Flags{})
		if err != nil || plan.Enabled {
			t.Fatalf("plan %+v, err %v; want disabled", plan, err)
		}
		v := plan.SkipVerdict()
		if v.Check != verdict.CheckGuard || v.Decision != verdict.Skip || v.Code != verdict.GuardDisabled || v.Message != "GUARD_REQUIRED is false" || v.Denied() {
			t.Fatalf("skip verdict = %+v", v)
		}
	})
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		flags   Flags
		enabled bool
		skip    string
		errPart string
		backend string
	}{
		{"required by default, nothing set", map[string]string{}, Flags{}, false, "", "GUARD_LLM_BACKEND", ""},
		{"backend without model", map[string]string{"GUARD_LLM_BACKEND": "openai"}, Flags{}, false, "", "GUARD_LLM_MODEL", ""},
		{"fully configured", map[string]string{"GUARD_LLM_BACKEND": "anthropic", "GUARD_LLM_MODEL": "g"}, Flags{}, true, "", "", "anthropic"},
		{"mock primary, no guard backend: mock guard", map[string]string{"LLM_BACKEND": "mock"}, Flags{}, true, "", "", "mock"},
		{"mock primary but guard backend named", map[string]string{"LLM_BACKEND": "mock", "GUARD_LLM_BACKEND": "ollama"}, Flags{}, false, "", "GUARD_LLM_MODEL", ""},
		{"false", map[string]string{"GUARD_REQUIRED": "false"}, Flags{}, false, SkipNotRequired, "", ""},
		{"0", map[string]string{"GUARD_REQUIRED": "0"}, Flags{}, false, SkipNotRequired, "", ""},
		{"FALSE, any case", map[string]string{"GUARD_REQUIRED": "FALSE"}, Flags{}, false, SkipNotRequired, "", ""},
		{"empty is not false", map[string]string{"GUARD_REQUIRED": ""}, Flags{}, false, "", "GUARD_LLM_BACKEND", ""},
		{"--no-guard confirmed", map[string]string{}, Flags{NoGuard: true, NoGuardConfirmed: true}, false, SkipFlag, "", ""},
		{"--no-guard alone", map[string]string{"LLM_BACKEND": "mock"}, Flags{NoGuard: true}, false, "", "--no-guard-confirmed", ""},
		{"--no-guard-confirmed alone", map[string]string{"LLM_BACKEND": "mock"}, Flags{NoGuardConfirmed: true}, false, "", "--no-guard-confirmed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loadConfig(t, tc.env)
			plan, err := Resolve(cfg.Guard, cfg.LLM.Backend, tc.flags)
			if tc.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errPart) {
					t.Fatalf("err = %v, want one naming %s", err, tc.errPart)
				}
				if tc.flags.NoGuard != tc.flags.NoGuardConfirmed && !errors.Is(err, ErrNoGuardUnconfirmed) {
					t.Fatalf("err = %v, want ErrNoGuardUnconfirmed", err)
				}
				return
			}
			if err != nil || plan.Enabled != tc.enabled || plan.SkipMessage != tc.skip || plan.Guard.Backend != tc.backend {
				t.Fatalf("plan %+v, err %v", plan, err)
			}
		})
	}
}

func TestWorkerEnv(t *testing.T) {
	look := config.MapLookup(map[string]string{"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "OPENAI_API_KEY": "sk-from-env", "SHELL": "/bin/sh"})
	llmCfg := config.LLM{OllamaBaseURL: "http://ollama:11434", OpenAIBaseURL: "http://oai/v1", OpenAIKey: config.NewSecret("sk-openai"),
		AnthropicURL: "https://anthropic", AnthropicKey: config.NewSecret("sk-ant"), MockScript: "rel/script.jsonl", MockScriptIsSet: true}
	cwd, _ := os.Getwd()
	cases := []struct {
		backend string
		want    []string
	}{
		{"ollama", []string{"OLLAMA_BASE_URL=http://ollama:11434"}},
		{"openai", []string{"OPENAI_API_KEY=sk-openai", "OPENAI_BASE_URL=http://oai/v1"}},
		{"anthropic", []string{"ANTHROPIC_API_KEY=sk-ant", "ANTHROPIC_BASE_URL=https://anthropic"}},
		{"mock", []string{"GUARD_MOCK_REPLY=ALLOW", "MOCK_LLM_SCRIPT=" + filepath.Join(cwd, "rel/script.jsonl")}},
	}
	for _, tc := range cases {
		t.Run(tc.backend, func(t *testing.T) {
			g := config.Guard{Backend: tc.backend, Model: "gm", TimeoutSecs: 7, MockReply: "ALLOW", MockReplySet: true}
			env, err := WorkerEnv(look, g, llmCfg)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "GUARD_LLM_BACKEND=" + tc.backend, "GUARD_LLM_MODEL=gm", "GUARD_TIMEOUT_SECS=7"}, tc.want...)
			slices.Sort(want)
			got := slices.Clone(env)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("env = %q\nwant  %q", got, want)
			}
		})
	}
	if _, err := WorkerEnv(look, config.Guard{}, llmCfg); err == nil {
		t.Error("WorkerEnv accepted an unresolved guard")
	}
	opt, err := ConfigHostOptions(look, config.Guard{Backend: "mock", TimeoutSecs: 12}, config.LLM{})
	if err != nil || opt.Timeout.Seconds() != 12 {
		t.Fatalf("ConfigHostOptions = %+v, %v", opt, err)
	}
}
