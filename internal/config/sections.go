package config

import (
	"math"
	"strings"
)

// Scanner configures the output scanner
// (docs/design/checks.md#output-scanner).
type Scanner struct {
	// Sensitivity is low, medium or high.
	Sensitivity string
}

func loadScanner(r *reader) Scanner {
	return Scanner{Sensitivity: r.enum("SCANNER_SENSITIVITY", "medium", "low", "medium", "high")}
}

// Agent holds the agent-loop limits (docs/design/cli.md#environment,
// docs/design/checks.md#check-order, docs/design/agent.md#agent-loop).
type Agent struct {
	// MaxSteps is AGENT_MAX_STEPS; MaxStepsSet says whether the variable
	// was present, because the effective limit differs when it is not
	// (docs/design/checks.md#check-order).
	MaxSteps                  int
	MaxStepsSet               bool
	SnapshotInterval          int
	LLMErrorLimit             int
	GuardDenialLimit          int
	JustificationFailureLimit int
	CheckDenialLimit          int
	// TokenBudget is 0 for unlimited.
	TokenBudget int
	// KeyRotationSteps is 0 when rotation is off.
	KeyRotationSteps int
	// AllowedDomains seeds tripwire.json allowed_domains
	// (docs/design/checks.md#tripwire-json); AllowedDomainsSet says whether the
	// variable was given.
	AllowedDomains    []string
	AllowedDomainsSet bool
}

// DefaultMaxSteps applies when neither the operator nor the policy sets a
// step limit.
const DefaultMaxSteps = 20

func loadAgent(r *reader) Agent {
	var a Agent
	a.MaxSteps, a.MaxStepsSet = r.intRange("AGENT_MAX_STEPS", DefaultMaxSteps, 1, 100000)
	a.SnapshotInterval, _ = r.intRange("AGENT_SNAPSHOT_INTERVAL", 50, 1, 1000000)
	a.LLMErrorLimit, _ = r.intRange("AGENT_LLM_ERROR_LIMIT", 5, 1, 1000000)
	a.GuardDenialLimit, _ = r.intRange("AGENT_GUARD_DENIAL_LIMIT", 3, 1, 1000000)
	a.JustificationFailureLimit, _ = r.intRange("AGENT_JUSTIFICATION_FAILURE_LIMIT", 3, 1, 1000000)
	a.CheckDenialLimit, _ = r.intRange("AGENT_CHECK_DENIAL_LIMIT", 5, 1, 1000000)
	a.TokenBudget, _ = r.intRange("AGENT_TOKEN_BUDGET_MAX", 0, 1, math.MaxInt32)
	a.KeyRotationSteps, _ = r.intRange("AGENT_KEY_ROTATION_STEPS", 0, 0, 1000000)
	if s, ok := r.look("AGENT_ALLOWED_DOMAINS"); ok {
		a.AllowedDomainsSet = true
		for _, d := range strings.Split(s, ",") {
			if d = strings.TrimSpace(d); d != "" {
				a.AllowedDomains = append(a.AllowedDomains, d)
			}
		}
	}
	return a
}

// Guard configures check 4 (docs/design/checks.md#guard-protocol).
type Guard struct {
	// Required is false only for GUARD_REQUIRED=false/0/no (any case).
	Required bool
	// RequiredSet reports that GUARD_REQUIRED has a value: a true Required
	// is then the operator's choice, not the default (ironvise check
	// denies when an explicitly required guard cannot run).
	RequiredSet bool
	Backend     string
	Model       string
	// TimeoutSecs is the per-request timeout.
	TimeoutSecs int
	// MockReply is GUARD_MOCK_REPLY; MockReplySet says whether it was set.
	MockReply    string
	MockReplySet bool
	// Enclave is GUARD_ENCLAVE: "none" (the default), "software" or
	// "remote" (docs/enclaves.md).
	Enclave string
	// EnclaveRemoteURL is ECTO_ENCLAVE_REMOTE_URL, required with
	// Enclave "remote".
	EnclaveRemoteURL string
	// EnclavePCRs are ECTO_ENCLAVE_PCR0 … ECTO_ENCLAVE_PCR31, hex-decoded:
	// the values a remote enclave's attestation must show. PCR0 is
	// required with Enclave "remote".
	EnclavePCRs map[int][]byte
}

func loadGuard(r *reader) Guard {
	// A word that is no documented spelling ("off") is refused rather than
	// read as "required": the operator meant to change something, and
	// neither reading is safe to guess.
	g := Guard{Required: r.switchVar("GUARD_REQUIRED", true, wordsGuardRequired)}
	v, set := r.look("GUARD_REQUIRED")
	g.RequiredSet = set && v != "" // an empty value counts as unset, as in switchVar
	g.Backend = r.enum("GUARD_LLM_BACKEND", "", llmBackends...)
	g.Model = r.str("GUARD_LLM_MODEL", "")
	g.TimeoutSecs, _ = r.intRange("GUARD_TIMEOUT_SECS", 30, 1, 3600)
	g.MockReply, g.MockReplySet = r.look("GUARD_MOCK_REPLY")
	g.Enclave, g.EnclaveRemoteURL, g.EnclavePCRs = loadEnclave(r)
	return g
}

// Validate applies the startup rule of docs/design/checks.md#guard-protocol
// for commands that run the guard (audit, serve): when the guard is required,
// its backend and model must be named — except that a mock primary backend
// with no guard backend makes the guard a mock too. It returns the effective
// guard.
func (g Guard) Validate(primaryBackend string) (Guard, error) {
	if !g.Required {
		return g, nil
	}
	if g.Enclave == "remote" {
		// The remote enclave runs the guard's model: a backend named as
		// well would be a second place prompts could go, so the two are
		// not combined.
		if g.Backend != "" {
			return g, &Error{Var: "GUARD_LLM_BACKEND", Value: g.Backend, Problem: "set while GUARD_ENCLAVE=remote, whose enclave runs the guard's model", Accepted: "unset GUARD_LLM_BACKEND and GUARD_LLM_MODEL, or choose GUARD_ENCLAVE=none or software"}
		}
		return g, nil
	}
	if g.Backend == "" && primaryBackend == "mock" {
		g.Backend = "mock"
		if g.Model == "" {
			g.Model = "mock-v1"
		}
		return g, nil
	}
	if g.Backend == "" {
		return g, &Error{Var: "GUARD_LLM_BACKEND", Problem: "required while GUARD_REQUIRED is true", Accepted: strings.Join(llmBackends, ", ") + "; or set GUARD_REQUIRED=false, or pass --no-guard --no-guard-confirmed"}
	}
	if g.Model == "" && g.Backend != "mock" {
		return g, &Error{Var: "GUARD_LLM_MODEL", Problem: "required while GUARD_REQUIRED is true", Accepted: "a model name of the guard backend, ideally a different model from the primary"}
	}
	return g, nil
}

// DefaultLLMTimeoutSecs is LLM_TIMEOUT_SECS's default: two minutes, room
// for a large local model on modest hardware.
const DefaultLLMTimeoutSecs = 120

var llmBackends = []string{"ollama", "openai", "anthropic", "mock"}

// Secret is a string that never prints: its String and GoString methods and
// its text encoding redact it, so an API key cannot reach a log by accident.
// The value sits behind a pointer so that even when a Secret is an
// unexported field of a printed struct — where fmt cannot call String —
// only an address is printed, never the key.
type Secret struct{ p *string }

// NewSecret wraps a secret value.
func NewSecret(v string) Secret {
	if v == "" {
		return Secret{}
	}
	return Secret{p: &v}
}

// Reveal returns the secret for the one place that must send it.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// Set reports whether the secret is non-empty.
func (s Secret) Set() bool { return s.p != nil }

// String implements fmt.Stringer with a redacted value.
func (s Secret) String() string {
	if s.p == nil {
		return ""
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer with a redacted value.
func (s Secret) GoString() string { return s.String() }

// MarshalText implements encoding.TextMarshaler with a redacted value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LLM configures the primary model backend
// (docs/design/agent.md#llm-backends).
type LLM struct {
	Backend         string
	OllamaBaseURL   string
	OllamaModel     string
	OpenAIKey       Secret
	OpenAIBaseURL   string
	OpenAIModel     string
	AnthropicKey    Secret
	AnthropicURL    string
	AnthropicModel  string
	MockScript      string
	MockScriptIsSet bool
	// TimeoutSecs bounds one call to the primary model, retries included
	// (LLM_TIMEOUT_SECS). The guard's calls are bounded by
	// GUARD_TIMEOUT_SECS instead.
	TimeoutSecs int
}

func loadLLM(r *reader) LLM {
	l := LLM{Backend: r.enum("LLM_BACKEND", "ollama", llmBackends...)}
	l.OllamaBaseURL = r.str("OLLAMA_BASE_URL", "http://localhost:11434")
	l.OllamaModel = r.str("OLLAMA_MODEL", "mistral")
	l.OpenAIKey = NewSecret(r.str("OPENAI_API_KEY", ""))
	l.OpenAIBaseURL = r.str("OPENAI_BASE_URL", "https://api.openai.com/v1")
	l.OpenAIModel = r.str("OPENAI_MODEL", "")
	l.AnthropicKey = NewSecret(r.str("ANTHROPIC_API_KEY", ""))
	l.AnthropicURL = r.str("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
	l.AnthropicModel = r.str("ANTHROPIC_MODEL", "")
	l.MockScript = r.str("MOCK_LLM_SCRIPT", "")
	l.MockScriptIsSet = l.MockScript != ""
	l.TimeoutSecs, _ = r.intRange("LLM_TIMEOUT_SECS", DefaultLLMTimeoutSecs, 1, 3600)
	return l
}
