//go:build !linux

package execclient

import (
	"context"
	"errors"
)

// daemonPath: serve listens on Linux only (package localsock).
const daemonPath = false

// Dial reports that no daemon answers on this platform.
func Dial(context.Context, string) (*Conn, error) { return nil, errors.ErrUnsupported }
