package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/ironvise/ironvise/internal/config"
)

// OpenAIDefaultBaseURL is the official endpoint, used when OPENAI_BASE_URL
// is not set.
const OpenAIDefaultBaseURL = "https://api.openai.com/v1"

// Chat Completions wire format.
type openaiMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type openaiFormat struct {
	Type string `json:"type"`
}

type openaiRequest struct {
	Model       string          `json:"model"`
	Messages    []openaiMessage `json:"messages"`
	Temperature float64         `json:"temperature"`
	// max_tokens rather than max_completion_tokens: it is the field every
	// OpenAI-compatible server (vLLM, llama.cpp, Ollama, LM Studio) reads.
	MaxTokens      int           `json:"max_tokens,omitempty"`
	ResponseFormat *openaiFormat `json:"response_format,omitempty"`
	Stream         bool          `json:"stream"`
}

type openaiResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// openai is the Chat Completions backend.
type openai struct {
	remote
	// key is a pointer so that printing the client (even with %#v, which
	// bypasses String on unexported fields) shows an address, not the key.
	key *config.Secret
}

// NewOpenAI returns a Chat Completions client. baseURL "" means the official
// endpoint, which needs a key; compatible servers may run without one. The
// model must be named: there is no default.
func NewOpenAI(baseURL string, key config.Secret, model string, opt Options) (Client, error) {
	return newOpenAI(baseURL, key, model, "OPENAI_MODEL", opt)
}

func newOpenAI(baseURL string, key config.Secret, model, modelVar string, opt Options) (Client, error) {
	base, err := hostedBase(BackendOpenAI, "OPENAI_BASE_URL", baseURL, OpenAIDefaultBaseURL, model, modelVar, "gpt-4o-mini")
	if err != nil {
		return nil, err
	}
	if u, _ := url.Parse(base); u.Hostname() == "api.openai.com" && !key.Set() {
		return nil, fmt.Errorf("llm: openai: OPENAI_API_KEY is not set: the official endpoint needs a key: %w", ErrNoKey)
	}
	ep := endpoint{backend: BackendOpenAI, keyVar: "OPENAI_API_KEY", modelVar: modelVar, urlVar: "OPENAI_BASE_URL", errMessage: func(b []byte) string {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		return e.Error.Message
	}}
	return &openai{remote: remote{newTransport(ep, base, &key, opt), BackendOpenAI, base + "/chat/completions", model}, key: &key}, nil
}

// Complete implements Client.
func (o *openai) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	body := openaiRequest{Model: o.model, Temperature: req.Temperature, MaxTokens: req.MaxTokens}
	if req.System != "" {
		body.Messages = append(body.Messages, openaiMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, openaiMessage{Role: string(m.Role), Content: m.Content})
	}
	if req.JSON {
		body.ResponseFormat = &openaiFormat{Type: "json_object"}
	}
	h := http.Header{}
	if o.key.Set() {
		h.Set("Authorization", "Bearer "+o.key.Reveal())
	}
	var out openaiResponse
	if err := o.t.postJSON(ctx, o.url, h, body, &out); err != nil {
		return Response{}, err
	}
	if len(out.Choices) == 0 {
		return Response{}, fmt.Errorf("llm: openai: response has no choices: %w", ErrBadResponse)
	}
	msg := out.Choices[0].Message
	if msg.Content == nil {
		if msg.Refusal != nil {
			return Response{}, fmt.Errorf("llm: openai: the model refused: %q: %w", *msg.Refusal, ErrBadResponse)
		}
		return Response{}, fmt.Errorf("llm: openai: response has no content: %w", ErrBadResponse)
	}
	r := Response{Text: *msg.Content, Model: out.Model, Latency: time.Since(start)}
	if r.Model == "" {
		r.Model = o.model
	}
	if out.Usage != nil {
		r.Usage = Usage{InputTokens: out.Usage.PromptTokens, OutputTokens: out.Usage.CompletionTokens, Reported: true}
	}
	return r, nil
}
