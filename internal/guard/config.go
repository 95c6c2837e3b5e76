package guard

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/remote"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Flags are the command-line switches of audit and serve that turn the
// guard off. Both must be given: --no-guard alone is a usage error, so a
// guard is never dropped by one stray flag.
type Flags struct {
	NoGuard          bool
	NoGuardConfirmed bool
}

// Skip messages of guard_disabled (docs/design/checks.md#reason-codes).
const (
	SkipNotRequired  = "GUARD_REQUIRED is false"
	SkipFlag         = "--no-guard"
	SkipUnconfigured = "no guard configured"
)

// Plan says whether the guard runs for a command that needs it (audit,
// serve).
type Plan struct {
	// Enabled is false when GUARD_REQUIRED is false or --no-guard was
	// confirmed; no worker runs, each step records guard skip and the
	// session records guard_required: false.
	Enabled bool
	// Guard is the effective guard configuration when Enabled (a mock
	// primary with no guard backend has become the mock).
	Guard config.Guard
	// SkipMessage is the guard_disabled message when not Enabled.
	SkipMessage string
}

// ErrNoGuardUnconfirmed means --no-guard was given without
// --no-guard-confirmed, or the reverse.
var ErrNoGuardUnconfirmed = errors.New("ironvise/guard: --no-guard needs --no-guard-confirmed")

// Resolve applies the startup rules of docs/design/checks.md#guard-protocol
// for audit and serve. A non-nil error is a startup error that names the
// variable or flag to fix.
func Resolve(g config.Guard, primaryBackend string, f Flags) (Plan, error) {
	if f.NoGuard != f.NoGuardConfirmed {
		return Plan{}, fmt.Errorf("guard: turning the guard off takes both --no-guard and --no-guard-confirmed: %w", ErrNoGuardUnconfirmed)
	}
	if f.NoGuard {
		return Plan{SkipMessage: SkipFlag}, nil
	}
	if !g.Required {
		return Plan{SkipMessage: SkipNotRequired}, nil
	}
	eff, err := g.Validate(primaryBackend)
	if err != nil {
		return Plan{}, fmt.Errorf("guard: %w", err)
	}
	return Plan{Enabled: true, Guard: eff}, nil
}

// SkipVerdict is the verdict each step records when the plan is disabled.
func (p Plan) SkipVerdict() verdict.Verdict {
	msg := p.SkipMessage
	if msg == "" {
		msg = SkipUnconfigured
	}
	return verdict.New(verdict.CheckGuard, verdict.Skip, verdict.GuardDisabled, msg)
}

// WorkerEnv builds the worker's environment
// (docs/design/checks.md#guard-protocol): PATH, HOME and LANG from look, the
// guard's own settings (GUARD_LLM_BACKEND, GUARD_LLM_MODEL,
// GUARD_TIMEOUT_SECS, GUARD_MOCK_REPLY) and the variables of the guard's
// backend only. g must be effective (Plan.Guard). Values come from the
// validated configuration, so a .env file counts as the host saw it.
// GUARD_HMAC_KEY is added per worker by the Host.
func WorkerEnv(look config.Lookup, g config.Guard, l config.LLM) ([]string, error) {
	var env []string
	add := func(k, v string) { env = append(env, k+"="+v) }
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		if v, ok := look(k); ok {
			add(k, v)
		}
	}
	if g.Enclave == string(enclave.LevelRemote) {
		// The remote enclave runs the model: the worker gets no backend
		// and no API key, only the channel over its secrets pipe.
		if g.TimeoutSecs > 0 {
			add("GUARD_TIMEOUT_SECS", strconv.Itoa(g.TimeoutSecs))
		}
		return env, nil
	}
	if g.Backend == "" {
		return nil, errors.New("guard: no guard backend: resolve the configuration with guard.Resolve first")
	}
	add("GUARD_LLM_BACKEND", g.Backend)
	if g.Model != "" {
		add("GUARD_LLM_MODEL", g.Model)
	}
	if g.TimeoutSecs > 0 {
		add("GUARD_TIMEOUT_SECS", strconv.Itoa(g.TimeoutSecs))
	}
	switch g.Backend {
	case llm.BackendOllama:
		add("OLLAMA_BASE_URL", l.OllamaBaseURL)
	case llm.BackendOpenAI:
		add("OPENAI_BASE_URL", l.OpenAIBaseURL)
		if l.OpenAIKey.Set() {
			add("OPENAI_API_KEY", l.OpenAIKey.Reveal())
		}
	case llm.BackendAnthropic:
		add("ANTHROPIC_BASE_URL", l.AnthropicURL)
		if l.AnthropicKey.Set() {
			add("ANTHROPIC_API_KEY", l.AnthropicKey.Reveal())
		}
	case llm.BackendMock:
		if g.MockReplySet {
			add("GUARD_MOCK_REPLY", g.MockReply)
		}
		if l.MockScriptIsSet {
			// The worker runs in "/", so a relative script path is made
			// absolute here.
			p, err := filepath.Abs(l.MockScript)
			if err != nil {
				return nil, fmt.Errorf("guard: MOCK_LLM_SCRIPT: %w", err)
			}
			add("MOCK_LLM_SCRIPT", p)
		}
	default:
		return nil, fmt.Errorf("guard: GUARD_LLM_BACKEND=%q: %w", g.Backend, llm.ErrUnknownBackend)
	}
	return env, nil
}

// ConfigHostOptions returns HostOptions for an effective guard: its worker
// environment, GUARD_TIMEOUT_SECS and its enclave (GUARD_ENCLAVE, with the
// remote enclave's URL and pinned PCRs). The caller adds the Logger.
func ConfigHostOptions(look config.Lookup, g config.Guard, l config.LLM) (HostOptions, error) {
	env, err := WorkerEnv(look, g, l)
	if err != nil {
		return HostOptions{}, err
	}
	opt := HostOptions{Env: env, Timeout: time.Duration(g.TimeoutSecs) * time.Second, Enclave: enclave.LevelNone}
	switch g.Enclave {
	case "", string(enclave.LevelNone):
	case string(enclave.LevelSoftware):
		opt.Enclave = enclave.LevelSoftware
	case string(enclave.LevelRemote):
		opt.Enclave = enclave.LevelRemote
		opt.Remote = &remote.Config{URL: g.EnclaveRemoteURL, PCRs: g.EnclavePCRs}
	default:
		return HostOptions{}, fmt.Errorf("guard: GUARD_ENCLAVE=%q is not none, software or remote", g.Enclave)
	}
	return opt, nil
}
