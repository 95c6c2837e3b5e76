//go:build linux

package container

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
)

// proxyNamespace is the network namespace of one proxy-mode container: only
// loopback, up, with the proxy's listener on it. The container joins it
// (--network=ns:<Path>); IronVise serves the listener from its own
// namespace, where the proxy's outbound connections are made.
type proxyNamespace struct {
	// Path names the namespace for the runtime: /proc/<pid>/fd/<n> of the
	// descriptor below, valid while it is open.
	Path string
	// Listener accepts the command's connections at ProxyAddr inside the
	// namespace.
	Listener net.Listener
	ns       *os.File
}

// newProxyNamespace creates the namespace and the listener. The caller must
// call Close. It needs CAP_SYS_ADMIN (rootful Podman's IronVise runs as
// root; see proxyRefusal).
func newProxyNamespace() (*proxyNamespace, error) {
	type made struct {
		pn  *proxyNamespace
		err error
	}
	ch := make(chan made, 1)
	// A goroutine of its own: if the thread cannot be returned to the
	// host's namespace it must die with the goroutine, and the caller's
	// thread is never at risk.
	go func() {
		pn, restored, err := enterAndListen()
		if restored {
			runtime.UnlockOSThread()
		}
		ch <- made{pn, err}
	}()
	m := <-ch
	return m.pn, m.err
}

// enterAndListen does the thread-scoped part of newProxyNamespace and
// reports whether the thread is back in the host's namespace.
//
// Thread affinity: unshare(CLONE_NEWNET) moves only the calling thread, and
// socket(2) places a socket in the namespace of the thread that calls it,
// so the sequence runs on one locked OS thread. Unless the thread is
// restored, it stays locked and the runtime destroys it when the goroutine
// exits, so no other goroutine ever runs in the container's namespace.
func enterAndListen() (pn *proxyNamespace, restored bool, err error) {
	runtime.LockOSThread()
	host, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, true, fmt.Errorf("open the host's network namespace: %w", err)
	}
	defer host.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("unshare a network namespace for the proxy: %w; fix: run IronVise as root (CAP_SYS_ADMIN), or set ECTO_SANDBOX_NETWORK=none", err)
	}
	defer func() {
		// Back to the host's namespace whatever happened; a thread that
		// cannot return is abandoned (see above).
		restored = true
		if serr := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); serr != nil {
			restored = false
			err = errors.Join(err, bug(fmt.Errorf("return to the host's network namespace: %w", serr)))
		}
		if err != nil && pn != nil {
			pn.Close()
			pn = nil
		}
	}()
	pn = &proxyNamespace{}
	if pn.ns, err = os.Open("/proc/thread-self/ns/net"); err != nil {
		return pn, false, fmt.Errorf("open the proxy's network namespace: %w", err)
	}
	// A new namespace's loopback is down: without it nothing, the proxy
	// included, is reachable at 127.0.0.1.
	if err = kernel.LoopbackUp(); err != nil {
		return pn, false, fmt.Errorf("bring up loopback in the proxy's network namespace: %w", err)
	}
	if pn.Listener, err = net.Listen("tcp4", ProxyAddr); err != nil {
		return pn, false, fmt.Errorf("listen on %s in the proxy's network namespace: %w", ProxyAddr, err)
	}
	// /proc/<pid>/fd/<n> rather than /proc/self/…: the runtime resolves
	// the path in its own process. Only root (IronVise's user) may follow
	// it.
	pn.Path = "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/" + strconv.Itoa(int(pn.ns.Fd()))
	return pn, false, nil
}

// Close closes the listener and the namespace's descriptor; the kernel
// frees the namespace once the container is gone too.
func (pn *proxyNamespace) Close() {
	if pn.Listener != nil {
		pn.Listener.Close()
	}
	if pn.ns != nil {
		pn.ns.Close()
	}
}

// bug marks a failure that should not happen (the kernel refusing to put a
// thread back in a namespace it came from).
func bug(err error) error { return fmt.Errorf("container: BUG: %w", err) }
