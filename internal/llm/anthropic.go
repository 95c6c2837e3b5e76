package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ironvise/ironvise/internal/config"
)

// Anthropic defaults.
const (
	AnthropicDefaultBaseURL = "https://api.anthropic.com"
	// AnthropicVersion is the anthropic-version header the Messages API
	// requires.
	AnthropicVersion = "2023-06-01"
)

// Messages API wire format.
type anthropicMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type anthropicRequest struct {
	Model       string             `json:"model"`
	MaxTokens   int                `json:"max_tokens"`
	System      string             `json:"system,omitempty"`
	Messages    []anthropicMessage `json:"messages"`
	Temperature float64            `json:"temperature"`
}

type anthropicResponse struct {
	Type    string `json:"type"`
	Model   string `json:"model"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// anthropic is the Messages API backend.
type anthropic struct {
	remote
	// key is a pointer so that printing the client (even with %#v, which
	// bypasses String on unexported fields) shows an address, not the key.
	key *config.Secret
}

// NewAnthropic returns a Messages API client. baseURL "" means the official
// endpoint. The key and the model are required.
func NewAnthropic(baseURL string, key config.Secret, model string, opt Options) (Client, error) {
	return newAnthropic(baseURL, key, model, "ANTHROPIC_MODEL", opt)
}

func newAnthropic(baseURL string, key config.Secret, model, modelVar string, opt Options) (Client, error) {
	base, err := hostedBase(BackendAnthropic, "ANTHROPIC_BASE_URL", baseURL, AnthropicDefaultBaseURL, model, modelVar, "claude-sonnet-4-5")
	if err != nil {
		return nil, err
	}
	if !key.Set() {
		return nil, fmt.Errorf("llm: anthropic: ANTHROPIC_API_KEY is not set: %w", ErrNoKey)
	}
	ep := endpoint{backend: BackendAnthropic, keyVar: "ANTHROPIC_API_KEY", modelVar: modelVar, urlVar: "ANTHROPIC_BASE_URL", errMessage: func(b []byte) string {
		var e struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		if e.Error.Type != "" && e.Error.Message != "" {
			return e.Error.Type + ": " + e.Error.Message
		}
		return e.Error.Message
	}}
	return &anthropic{remote: remote{newTransport(ep, base, &key, opt), BackendAnthropic, base + "/v1/messages", model}, key: &key}, nil
}

// Complete implements Client. The Messages API has no JSON mode, so
// req.JSON only relies on the prompt.
func (a *anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	body := anthropicRequest{Model: a.model, MaxTokens: req.MaxTokens, System: req.System, Temperature: req.Temperature}
	if body.MaxTokens <= 0 {
		body.MaxTokens = DefaultMaxTokens
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, anthropicMessage{Role: string(m.Role), Content: m.Content})
	}
	h := http.Header{}
	h.Set("x-api-key", a.key.Reveal())
	h.Set("anthropic-version", AnthropicVersion)
	var out anthropicResponse
	if err := a.t.postJSON(ctx, a.url, h, body, &out); err != nil {
		return Response{}, err
	}
	var text strings.Builder
	found := false
	for _, c := range out.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
			found = true
		}
	}
	if !found {
		return Response{}, fmt.Errorf("llm: anthropic: response has no text block (stop_reason %q): %w", out.StopReason, ErrBadResponse)
	}
	r := Response{Text: text.String(), Model: out.Model, Latency: time.Since(start)}
	if r.Model == "" {
		r.Model = a.model
	}
	if out.Usage != nil {
		r.Usage = Usage{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens, Reported: true}
	}
	return r, nil
}
