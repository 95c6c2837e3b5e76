// Package llm talks to the language models IronVise uses: the primary model
// that proposes intents and the guard model that reviews them
// (docs/design/agent.md#llm-backends).
//
// # Backends
//
// One small [Client] interface, four backends:
//
//   - ollama: POST {OLLAMA_BASE_URL}/api/chat, non-streaming, "format":"json"
//     when JSON output is asked for.
//   - openai: POST {OPENAI_BASE_URL}/chat/completions (Chat Completions),
//     "response_format":{"type":"json_object"} when JSON output is asked for.
//     Any OpenAI-compatible server works through the base URL. The model must
//     be named (OPENAI_MODEL); there is no hidden default.
//   - anthropic: POST {ANTHROPIC_BASE_URL}/v1/messages with x-api-key and
//     anthropic-version headers. The model must be named (ANTHROPIC_MODEL).
//   - mock: deterministic and offline (backend "mock", model "mock-v1"); it
//     replays a script, see "Mock script" below.
//
// Every HTTP backend shares one transport: [Options].Timeout
// (LLM_TIMEOUT_SECS for [New]) and the caller's context bound the whole
// call, retries included, the earlier deadline winning; 429 and
// 5xx answers and transient network errors are retried with exponential
// backoff and jitter, a Retry-After header (seconds or HTTP date) is honoured
// up to a cap, and any other 4xx fails at once. Token usage is returned when
// the API reports it.
//
// # Usage
//
//	c, err := llm.New(cfg.LLM, llm.Options{Logger: log, BuiltinScript: demo})
//	p, err := llm.ProposeIntent(ctx, c, llm.Request{System: sys, Messages: hist, JSON: true},
//		func(s string) error { _, err := intent.Parse(s, opts); return err })
//	// p.Reply goes to the schema check; when p.Repaired, p.FirstReply and
//	// p.FirstError are recorded as a schema_error event.
//
// # Mock script
//
// MOCK_LLM_SCRIPT names a JSON-lines file. Each non-blank line is one object:
//
//	{"role":"agent","content":"{\"action\":\"read_file\",\"params\":{\"path\":\"README.md\"},\"justification\":\"read the readme\"}"}
//	{"role":"guard","content":"ALLOW"}
//	{"role":"agent","error":"connection reset by peer"}
//	{"role":"guard","content":"DENY: off goal","delay_ms":1500}
//
// role is "agent" (replies to intent proposals, in order) or "guard" (the
// mock guard's replies, in order). Exactly one of content (the reply text)
// and error (the call fails with this message, as a transport failure
// would) is given. delay_ms (0–600000) delays the reply; the delay honours
// the caller's context, so a delay past a deadline is a timeout. Any other
// key, a duplicate key, a wrong type or a blank role is an error naming the
// line. When the agent lines run out, the call fails with
// [ErrScriptExhausted]. The mock guard answers GUARD_MOCK_REPLY when it is
// set; otherwise its next guard line; with none left, "DENY: mock guard".
// A chat request (KindChat) is answered "mock: " followed by the last user
// message (docs/design/api.md#mock-backend). Without MOCK_LLM_SCRIPT the
// caller's built-in script ([Options].BuiltinScript) is replayed.
//
// # Security
//
// API keys are [config.Secret] values, revealed only into the request
// header. Error texts never contain them: a response body quoted in an error
// has the key replaced (redact.Values: everywhere when it is 8 bytes or
// longer, as a whole token when shorter), and URLs are printed redacted.
//
// # Failures
//
// A failed call returns a [*CallError] naming the backend, its base URL,
// what happened and what to check (the base URL variable, the key, or
// LLM_TIMEOUT_SECS / GUARD_TIMEOUT_SECS for a slow model). Each retry logs
// one warning with the attempt number, the number allowed and the reason.
// [WithWait] lets a front end show how long a call has been waiting.
//
// # Limitations
//
// Streaming is not used. The anthropic backend has no JSON mode: it relies
// on the system prompt and the repair attempt of [ProposeIntent]. Token
// usage of the mock is an estimate (bytes / 4). The mock guard's position in
// its script is per process, so a restarted guard worker starts its guard
// lines from the top again.
package llm

import (
	"context"
	"errors"
	"time"
)

// Backend names, as LLM_BACKEND and GUARD_LLM_BACKEND spell them.
const (
	BackendOllama    = "ollama"
	BackendOpenAI    = "openai"
	BackendAnthropic = "anthropic"
	BackendMock      = "mock"
)

// MockModel is the model name the mock backend reports
// (docs/design/api.md#mock-backend).
const MockModel = "mock-v1"

// Client is one configured model endpoint.
type Client interface {
	// Complete sends one chat completion and returns the model's text. Every
	// error is a transport failure from the agent loop's point of view
	// (AGENT_LLM_ERROR_LIMIT); a reply that fails to parse is not an error
	// here.
	Complete(ctx context.Context, req Request) (Response, error)
	// Backend returns the backend name (ollama, openai, anthropic, mock).
	Backend() string
	// Model returns the configured model name.
	Model() string
}

// Kind says what a request is for. Only the mock backend looks at it, to
// pick the matching scripted reply; the HTTP backends ignore it.
type Kind int

// The request kinds.
const (
	KindAgent Kind = iota // propose an intent
	KindGuard             // review an intent (the guard)
	KindChat              // a chat message (docs/design/api.md#chat)
)

// Role of a chat message.
type Role string

// The message roles. The system prompt is Request.System, not a message.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of the conversation.
type Message struct {
	Role    Role
	Content string
}

// Request is one completion request.
type Request struct {
	Kind     Kind
	System   string
	Messages []Message
	// JSON asks the backend for a JSON object reply where it supports it.
	JSON bool
	// Temperature is always sent; its zero value asks for deterministic
	// output, which is what the guard uses.
	Temperature float64
	// MaxTokens caps the reply; 0 means the backend's default (anthropic,
	// which requires a value, gets DefaultMaxTokens).
	MaxTokens int
}

// DefaultMaxTokens is the reply cap sent to backends that require one when
// the request sets none. An intent is at most 64 KiB, well under this many
// tokens in practice.
const DefaultMaxTokens = 4096

// Usage is the token count of one call.
type Usage struct {
	InputTokens  int
	OutputTokens int
	// Reported is false when the API said nothing about usage.
	Reported bool
}

// Add returns the sum of two usages; the sum is reported if either was.
func (u Usage) Add(o Usage) Usage {
	return Usage{u.InputTokens + o.InputTokens, u.OutputTokens + o.OutputTokens, u.Reported || o.Reported}
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Response is one completion.
type Response struct {
	Text  string
	Usage Usage
	// Model is the model the API says answered, else the configured one.
	Model string
	// Latency is the wall time of the call, retries included.
	Latency time.Duration
}

// Sentinel errors, compared with errors.Is.
var (
	// ErrNoModel means the backend needs a model name and none was given.
	ErrNoModel = errors.New("ironvise/llm: no model named")
	// ErrNoKey means the backend needs an API key and none was given.
	ErrNoKey = errors.New("ironvise/llm: no API key")
	// ErrScriptExhausted means the mock script has no agent reply left.
	ErrScriptExhausted = errors.New("ironvise/llm: mock script exhausted")
	// ErrMockScript means a mock script could not be parsed.
	ErrMockScript = errors.New("ironvise/llm: invalid mock script")
	// ErrBadResponse means the API answered 2xx with a body that is not
	// its documented format, or with no text.
	ErrBadResponse = errors.New("ironvise/llm: malformed API response")
	// ErrUnknownBackend means the backend name is not one of the four.
	ErrUnknownBackend = errors.New("ironvise/llm: unknown backend")
)
