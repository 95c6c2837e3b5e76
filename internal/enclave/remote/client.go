package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/llm"
)

// inferRequest and inferResponse are the JSON bodies of /v1/infer.
type inferRequest struct {
	Session    string `json:"session"`
	Seq        uint64 `json:"seq"`
	Ciphertext []byte `json:"ciphertext"`
}

type inferResponse struct {
	Seq        uint64 `json:"seq"`
	Ciphertext []byte `json:"ciphertext"`
}

// modelRequest is the plaintext of an inference request (Q in the package
// doc): the fields of llm.Request a model needs.
type modelRequest struct {
	System      string         `json:"system"`
	Messages    []modelMessage `json:"messages"`
	Temperature float64        `json:"temperature"`
	MaxTokens   int            `json:"max_tokens"`
	JSON        bool           `json:"json"`
}

type modelMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// modelReply is the plaintext of an inference reply (A in the package doc).
type modelReply struct {
	Text  string `json:"text"`
	Model string `json:"model"`
	Error string `json:"error,omitempty"`
}

// Client is an llm.Client whose model runs in the enclave at the other end
// of a [Channel].
type Client struct {
	ch *Channel
	hc *http.Client

	mu    sync.Mutex
	model string // guarded by mu (taken inside ch.mu, never around it); the model the enclave last named
}

var _ llm.Client = (*Client)(nil)

// NewClient returns a client that sends its requests through ch with hc
// (nil: a client of its own; redirects are never followed). Calls are
// serialised on the channel; a call that fails after its request was sent
// kills the channel and every later call fails with [ErrChannel].
func NewClient(ch *Channel, hc *http.Client) *Client {
	return &Client{ch: ch, hc: httpClient(hc)}
}

// Backend implements llm.Client; it returns [Backend].
func (c *Client) Backend() string { return Backend }

// Model implements llm.Client: the model the enclave named in its last
// answer, or [DefaultModel] before the first.
func (c *Client) Model() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.model == "" {
		return DefaultModel
	}
	return c.model
}

// String implements fmt.Stringer; it names the channel, never its keys.
func (c *Client) String() string { return "remote.Client(" + c.ch.String() + ")" }

// GoString implements fmt.GoStringer like String.
func (c *Client) GoString() string { return c.String() }

// Complete implements llm.Client: it seals req, posts it to the enclave and
// opens the reply. The context bounds the whole call.
func (c *Client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	start := time.Now()
	q := modelRequest{System: req.System, Temperature: req.Temperature, MaxTokens: req.MaxTokens, JSON: req.JSON, Messages: make([]modelMessage, len(req.Messages))}
	for i, m := range req.Messages {
		q.Messages[i] = modelMessage{Role: string(m.Role), Content: m.Content}
	}
	pt, err := json.Marshal(q)
	if err != nil {
		return llm.Response{}, bug(err)
	}

	ch := c.ch
	ch.mu.Lock()
	defer ch.mu.Unlock()
	// A call cancelled before it starts must not spend a counter or kill
	// the channel.
	if err := ctx.Err(); err != nil {
		return llm.Response{}, fmt.Errorf("remote: infer %s: %w", ch.url, err)
	}
	seq, ct, err := ch.sealLocked(pt)
	clear(pt)
	if err != nil {
		return llm.Response{}, err
	}
	var resp inferResponse
	err = postJSON(ctx, c.hc, ch.url+"/v1/infer", inferRequest{Session: ch.session, Seq: seq, Ciphertext: ct}, &resp)
	if err != nil {
		// Whether the enclave consumed the message is unknown, so the two
		// sides' counters may no longer agree.
		err = fmt.Errorf("remote: infer %s: message %d: %w", ch.url, seq, err)
		ch.killLocked(err)
		return llm.Response{}, err
	}
	// Each request has exactly one reply, numbered like it; openLocked
	// refuses any other counter.
	rpt, err := ch.openLocked(resp.Seq, resp.Ciphertext)
	if err != nil {
		return llm.Response{}, err
	}
	var a modelReply
	err = decodeStrict(rpt, &a)
	clear(rpt)
	if err != nil {
		// The reply is authentic and the counters agree: the channel
		// stays usable.
		return llm.Response{}, fmt.Errorf("remote: infer %s: reply %d: %w", ch.url, seq, errors.Join(err, llm.ErrBadResponse))
	}
	if a.Error != "" {
		return llm.Response{}, fmt.Errorf("remote: infer %s: %q: %w", ch.url, truncate([]byte(a.Error), 500), ErrModel)
	}
	if a.Text == "" {
		return llm.Response{}, fmt.Errorf("remote: infer %s: reply %d has no text: %w", ch.url, seq, llm.ErrBadResponse)
	}
	model := a.Model
	if model == "" {
		model = DefaultModel
	}
	c.mu.Lock()
	c.model = model
	c.mu.Unlock()
	return llm.Response{Text: a.Text, Model: model, Latency: time.Since(start)}, nil
}
