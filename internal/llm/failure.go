package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// CallError is the final failure of one call to a model server. Its text
// says which backend at which base URL failed, how, and what to check, so a
// newcomer whose server is down or slow is pointed at the setting to fix:
//
//	llm: the openai backend at http://127.0.0.1:9/v1 did not answer (4 attempts):
//	connection refused; check that the server is running and that
//	OPENAI_BASE_URL points at it
//
// It wraps the cause: errors.As finds a *StatusError, errors.Is finds
// ErrBadResponse or the context's error.
type CallError struct {
	Backend string
	// BaseURL is the configured base URL, printed without a password.
	BaseURL string
	// What says how the call failed ("did not answer (4 attempts)").
	What string
	// Check names what to look at, e.g. the base URL variable; may be "".
	Check string
	Err   error
}

// Error implements error.
func (e *CallError) Error() string {
	s := "llm: the " + e.Backend + " backend at " + e.BaseURL + " " + e.What
	if e.Err != context.DeadlineExceeded && e.Err != context.Canceled { // What says it all
		s += ": " + reason(e.Err)
	}
	if e.Check != "" {
		s += "; " + e.Check
	}
	return s
}

// reason is err's text for a message that names the backend already: a
// *StatusError without its "llm: backend:" prefix and hint (the message
// says what to check).
func reason(err error) string {
	if se, ok := err.(*StatusError); ok {
		return se.status()
	}
	return err.Error()
}

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }

// failed builds the error of a call that ended after attempts tries with
// err; note, when set, says why no retry followed.
func (t *transport) failed(attempts int, err error, note string) error {
	tries := ""
	if attempts > 1 {
		tries = fmt.Sprintf(" (%d attempts)", attempts)
	}
	if note != "" {
		tries = fmt.Sprintf(" (%d attempt%s; %s)", attempts, plural(attempts), note)
	}
	e := &CallError{Backend: t.ep.backend, BaseURL: t.base, Err: err}
	var se *StatusError
	switch {
	case errors.As(err, &se) && se.StatusCode == http.StatusTooManyRequests:
		e.What = "is rate limiting the calls" + tries
		e.Check = "wait and retry, or check the account's rate limits"
	case errors.As(err, &se) && se.StatusCode >= 500:
		e.What = "answered with a server error" + tries
		e.Check = "the server is up but failing: check its logs"
	case errors.As(err, &se):
		e.What = "refused the request" + tries
		e.Check = se.Hint
	case errors.Is(err, ErrBadResponse):
		e.What = "answered in an unexpected format" + tries
		e.Check = "check that " + t.ep.urlVar + " points at a server that speaks the " + t.ep.backend + " API"
	default:
		e.What = "did not answer" + tries
		e.Check = "check that the server is running and that " + t.ep.urlVar + " points at it"
	}
	return e
}

// interrupted builds the error of a call stopped by its context: the call's
// own time limit (naming the variable that sets it), or the caller's
// deadline or cancellation.
func (t *transport) interrupted(parent context.Context, err error) error {
	e := &CallError{Backend: t.ep.backend, BaseURL: t.base, Err: err}
	slow := func(variable string) string {
		check := "check that the server is running and that " + t.ep.urlVar + " points at it"
		if variable != "" {
			check += ", or raise " + variable + " for a slow model"
		}
		return check
	}
	switch {
	case parent.Err() == nil:
		e.What = "did not answer within " + t.timeout.String()
		e.Check = slow(t.timeoutVar)
	case errors.Is(parent.Err(), context.DeadlineExceeded):
		e.What = "did not answer before the caller's deadline"
		if t.deadlineVar != "" {
			e.What = "did not answer in the time " + t.deadlineVar + " allows"
			e.Check = slow(t.deadlineVar)
		}
	default:
		e.What = "was interrupted"
	}
	return e
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
