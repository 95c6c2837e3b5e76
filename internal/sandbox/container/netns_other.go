//go:build !linux

package container

import (
	"errors"
	"fmt"
	"net"
)

// proxyNamespace is Linux-only (see netns_linux.go).
type proxyNamespace struct {
	Path     string
	Listener net.Listener
}

// newProxyNamespace fails closed: only Linux has network namespaces.
func newProxyNamespace() (*proxyNamespace, error) {
	return nil, fmt.Errorf("container: a network namespace for the egress proxy: %w", errors.ErrUnsupported)
}

// Close implements nothing: there is never a namespace to close.
func (pn *proxyNamespace) Close() {}
