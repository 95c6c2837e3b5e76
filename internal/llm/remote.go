package llm

import (
	"context"
	"fmt"
)

// remote is what the HTTP backends share: the transport to their server,
// the endpoint URL and the model, and how a client prints.
type remote struct {
	t       *transport
	backend string
	url     string
	model   string
}

// String implements fmt.Stringer; it names the backend, model and URL.
func (r *remote) String() string {
	return "llm." + r.backend + "(" + r.model + " at " + redactURL(r.url) + ")"
}

// GoString implements fmt.GoStringer like String, so %#v cannot print the
// fields (an API key among them).
func (r *remote) GoString() string { return r.String() }

// Backend implements Client.
func (r *remote) Backend() string { return r.backend }

// Model implements Client.
func (r *remote) Model() string { return r.model }

// hostedBase returns the base URL of a hosted API (def when baseURL is
// empty), checked. A hosted API has no default model, so model must be
// named; the error names modelVar, the variable that sets it, with an
// example model.
func hostedBase(backend, urlVar, baseURL, def, model, modelVar, example string) (string, error) {
	if baseURL == "" {
		baseURL = def
	}
	base, err := parseBaseURL(urlVar, baseURL)
	if err != nil {
		return "", err
	}
	if model == "" {
		return "", fmt.Errorf("llm: %s: %s is not set: the model must be named (there is no default), e.g. %s=%s: %w", backend, modelVar, modelVar, example, ErrNoModel)
	}
	return base, nil
}

// WithWait returns c with wait called as each call starts and the function
// wait returns called when the call ends, whatever its outcome: a front end
// shows a live "waiting for the model" line this way (internal/waitline)
// without the backends knowing about terminals.
func WithWait(c Client, wait func() (done func())) Client {
	return &waited{Client: c, wait: wait}
}

type waited struct {
	Client
	wait func() func()
}

// Complete implements Client.
func (w *waited) Complete(ctx context.Context, req Request) (Response, error) {
	done := w.wait()
	defer done()
	return w.Client.Complete(ctx, req)
}

// String implements fmt.Stringer like the wrapped client.
func (w *waited) String() string { return fmt.Sprint(w.Client) }

// GoString implements fmt.GoStringer like String.
func (w *waited) GoString() string { return w.String() }
