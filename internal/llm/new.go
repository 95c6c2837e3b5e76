package llm

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ironvise/ironvise/internal/config"
)

// New returns the primary model client that cfg selects (LLM_BACKEND).
// Unless opt sets a Timeout, each call is bounded by LLM_TIMEOUT_SECS.
func New(cfg config.LLM, opt Options) (Client, error) {
	if opt.Timeout <= 0 && cfg.TimeoutSecs > 0 {
		opt.Timeout, opt.TimeoutVar = time.Duration(cfg.TimeoutSecs)*time.Second, "LLM_TIMEOUT_SECS"
	}
	switch cfg.Backend {
	case BackendOllama:
		return newOllama(cfg.OllamaBaseURL, cfg.OllamaModel, "OLLAMA_MODEL", opt)
	case BackendOpenAI:
		return newOpenAI(cfg.OpenAIBaseURL, cfg.OpenAIKey, cfg.OpenAIModel, "OPENAI_MODEL", opt)
	case BackendAnthropic:
		return newAnthropic(cfg.AnthropicURL, cfg.AnthropicKey, cfg.AnthropicModel, "ANTHROPIC_MODEL", opt)
	case BackendMock:
		script, err := loadScript(cfg, opt)
		if err != nil {
			return nil, err
		}
		return NewMock(script, MockOptions{}), nil
	}
	return nil, fmt.Errorf("llm: LLM_BACKEND=%q (accepted: ollama, openai, anthropic, mock): %w", cfg.Backend, ErrUnknownBackend)
}

// NewGuard returns the guard's model client: the backend and model of g
// (GUARD_LLM_BACKEND, GUARD_LLM_MODEL) with the base URLs and keys shared
// with the primary backend settings in l. g must be the effective guard
// returned by config.Guard.Validate, so a mock primary with no guard backend
// arrives here as the mock.
//
// The guard worker bounds each call by a budget a little under
// GUARD_TIMEOUT_SECS, so a call that runs out of it names that variable;
// the client's own limit is the whole GUARD_TIMEOUT_SECS, which never cuts
// the worker's budget short.
func NewGuard(g config.Guard, l config.LLM, opt Options) (Client, error) {
	if opt.Timeout <= 0 && g.TimeoutSecs > 0 {
		opt.Timeout = time.Duration(g.TimeoutSecs) * time.Second
	}
	if opt.DeadlineVar == "" {
		opt.DeadlineVar = "GUARD_TIMEOUT_SECS"
	}
	switch g.Backend {
	case BackendOllama:
		return newOllama(l.OllamaBaseURL, g.Model, "GUARD_LLM_MODEL", opt)
	case BackendOpenAI:
		return newOpenAI(l.OpenAIBaseURL, l.OpenAIKey, g.Model, "GUARD_LLM_MODEL", opt)
	case BackendAnthropic:
		return newAnthropic(l.AnthropicURL, l.AnthropicKey, g.Model, "GUARD_LLM_MODEL", opt)
	case BackendMock:
		script, err := loadScript(l, opt)
		if err != nil {
			return nil, err
		}
		return NewMock(script, MockOptions{GuardReply: g.MockReply, GuardReplySet: g.MockReplySet}), nil
	case "":
		return nil, fmt.Errorf("llm: GUARD_LLM_BACKEND is not set (accepted: ollama, openai, anthropic, mock): %w", ErrUnknownBackend)
	}
	return nil, fmt.Errorf("llm: GUARD_LLM_BACKEND=%q (accepted: ollama, openai, anthropic, mock): %w", g.Backend, ErrUnknownBackend)
}

// loadScript reads MOCK_LLM_SCRIPT, or parses the built-in script.
func loadScript(cfg config.LLM, opt Options) ([]ScriptEntry, error) {
	if !cfg.MockScriptIsSet {
		s, err := ParseScript(opt.BuiltinScript)
		if err != nil {
			return nil, fmt.Errorf("llm: built-in mock script: %w", err)
		}
		return s, nil
	}
	f, err := os.Open(cfg.MockScript)
	if err != nil {
		return nil, fmt.Errorf("llm: MOCK_LLM_SCRIPT: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScriptBytes+1))
	if err != nil {
		return nil, fmt.Errorf("llm: MOCK_LLM_SCRIPT: read %s: %w", cfg.MockScript, err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("MOCK_LLM_SCRIPT=%s: %w", cfg.MockScript, err)
	}
	return s, nil
}
