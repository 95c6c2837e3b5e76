//go:build !linux

package localsock

import (
	"context"
	"errors"
)

// Handler runs one request.
type Handler func(ctx context.Context, req *Request) *Response

// Listener is not available here: the peer check needs SO_PEERCRED, so
// the daemon path is Linux only and exec runs in-process.
type Listener struct{}

// Listen reports that the daemon path is unsupported on this platform.
func Listen(string) (*Listener, error) { return nil, errors.ErrUnsupported }

// Path is empty: nothing listens.
func (*Listener) Path() string { return "" }

// Serve returns at once.
func (*Listener) Serve(context.Context, Handler) {}

// Close does nothing.
func (*Listener) Close() error { return nil }
