package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Ollama wire format (POST /api/chat, "stream": false).
type ollamaMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type ollamaOptions struct {
	Temperature float64 `json:"temperature"`
	NumPredict  int     `json:"num_predict,omitempty"`
}

type ollamaRequest struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Stream   bool            `json:"stream"`
	Format   string          `json:"format,omitempty"`
	Options  ollamaOptions   `json:"options"`
}

type ollamaResponse struct {
	Model   string         `json:"model"`
	Message *ollamaMessage `json:"message"`
	Done    bool           `json:"done"`
	// The counts are absent when the prompt was cached or the server is an
	// older version; pointers tell absent from zero.
	PromptEvalCount *int `json:"prompt_eval_count"`
	EvalCount       *int `json:"eval_count"`
}

// ollama is the Ollama chat API backend.
type ollama struct{ remote }

// NewOllama returns a client for an Ollama server at baseURL.
func NewOllama(baseURL, model string, opt Options) (Client, error) {
	return newOllama(baseURL, model, "OLLAMA_MODEL", opt)
}

// newOllama names modelVar in errors: OLLAMA_MODEL, or GUARD_LLM_MODEL for
// the guard.
func newOllama(baseURL, model, modelVar string, opt Options) (Client, error) {
	base, err := parseBaseURL("OLLAMA_BASE_URL", baseURL)
	if err != nil {
		return nil, err
	}
	if model == "" {
		return nil, fmt.Errorf("llm: ollama: %s is empty: name a pulled model (ollama list): %w", modelVar, ErrNoModel)
	}
	ep := endpoint{backend: BackendOllama, modelVar: modelVar, urlVar: "OLLAMA_BASE_URL", errMessage: func(b []byte) string {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		return e.Error
	}}
	return &ollama{remote{newTransport(ep, base, nil, opt), BackendOllama, base + "/api/chat", model}}, nil
}

// Complete implements Client.
func (o *ollama) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	body := ollamaRequest{Model: o.model, Stream: false, Options: ollamaOptions{Temperature: req.Temperature, NumPredict: req.MaxTokens}}
	if req.System != "" {
		body.Messages = append(body.Messages, ollamaMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, ollamaMessage{Role: string(m.Role), Content: m.Content})
	}
	if req.JSON {
		body.Format = "json"
	}
	var out ollamaResponse
	if err := o.t.postJSON(ctx, o.url, nil, body, &out); err != nil {
		return Response{}, err
	}
	if out.Message == nil {
		return Response{}, fmt.Errorf("llm: ollama: response has no message: %w", ErrBadResponse)
	}
	r := Response{Text: out.Message.Content, Model: out.Model, Latency: time.Since(start)}
	if r.Model == "" {
		r.Model = o.model
	}
	if out.PromptEvalCount != nil || out.EvalCount != nil {
		r.Usage = Usage{InputTokens: deref(out.PromptEvalCount), OutputTokens: deref(out.EvalCount), Reported: true}
	}
	return r, nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
