//go:build linux

package native

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
)

// Proxy mode (sandbox.Request.Egress, docs/reference/sandboxing.md#network-egress).
//
// The command's network namespace is its own, as in mode none, and holds
// only loopback. The launcher, inside it and before it drops its
// privileges, listens on 127.0.0.1:launch.ProxyPort and sends the listening
// socket to the tier over its launch.ProxyFD socket (SCM_RIGHTS), closing
// its own copy. The tier serves the egress proxy on that socket for the
// command's lifetime: connections accepted on it come from inside the
// namespace, and the proxy's own dials leave from IronVise's namespace.
// So the proxy is the command's one way out, and it exists only while the
// command does: it stops when the launcher (PID 1 of the command's PID
// namespace, whose end takes every process of the namespace along) has
// exited or the run is over, and the run's records are complete when Run
// returns.

// proxyURL is what the proxy variables of a proxy-mode command point to.
var proxyURL = "http://127.0.0.1:" + strconv.Itoa(launch.ProxyPort)

// proxyEnv are the variables set in a proxy-mode command's environment,
// over anything the caller passed. Every variable is the one HTTP proxy
// URL: curl, git (libcurl), Python's urllib and pip, npm and Go take
// HTTP_PROXY and HTTPS_PROXY (CONNECT for https), and the proxy also
// speaks SOCKS5 on the same port, but ALL_PROXY stays an http:// URL too,
// which every client that reads ALL_PROXY understands (a socks5h:// one
// would make pip ask for a SOCKS extra it may not have). NO_PROXY is set
// empty: nothing bypasses the proxy (there is nothing to reach without
// it), and a caller's NO_PROXY cannot say otherwise.
func proxyEnv(env map[string]string) {
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		env[k] = proxyURL
	}
	env["NO_PROXY"], env["no_proxy"] = "", ""
}

// proxyPair is the socket pair of a launcher's launch.ProxyFD: the
// parent's end (non-blocking, for the runtime's poller) and the
// launcher's.
func proxyPair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair for the egress proxy's socket: %w", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("socketpair for the egress proxy's socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "egress-proxy"), os.NewFile(uintptr(fds[1]), "egress-proxy-launcher"), nil
}

// errNoProxySocket is a launcher that closed launch.ProxyFD without
// sending a socket: it failed (its status record says why) or died.
var errNoProxySocket = errors.New("the launcher ended without handing over the egress proxy's socket")

// receiveListener reads the listening socket the launcher sent on f. It
// returns once the socket came or the launcher's end closed (its exit, or
// the run's end, which kills it).
func receiveListener(f *os.File) (net.Listener, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	defer c.Close()
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("egress proxy: descriptor %d is not a Unix socket", launch.ProxyFD)
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: receive the listening socket: %w", err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			if rights, err := unix.ParseUnixRights(&msgs[i]); err == nil {
				fds = append(fds, rights...)
			}
		}
	}
	if n == 0 && len(fds) == 0 {
		return nil, errNoProxySocket
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("egress proxy: the launcher sent %d descriptors, want one listening socket", len(fds))
	}
	unix.CloseOnExec(fds[0])
	lf := os.NewFile(uintptr(fds[0]), "egress-proxy-listener")
	ln, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		return nil, fmt.Errorf("egress proxy: the launcher's socket is no listener: %w", err)
	}
	want := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: launch.ProxyPort}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.Equal(want.IP) || a.Port != want.Port {
		ln.Close()
		return nil, fmt.Errorf("egress proxy: the launcher's socket listens on %v, want %v", ln.Addr(), want)
	}
	return ln, nil
}

// proxyRun is the egress proxy of one command.
type proxyRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	recs   []egress.Record
	err    error // what Serve returned
}

// serveProxy receives the command's listening socket from l and serves the
// proxy on it until ctx ends or stop is called.
func (t *Tier) serveProxy(ctx context.Context, l *launcher, rules *egress.Rules) (*proxyRun, error) {
	ln, err := receiveListener(l.proxy)
	if err != nil {
		return nil, err
	}
	pr := &proxyRun{done: make(chan struct{})}
	p, err := egress.New(egress.Config{Rules: rules, Resolver: t.opts.Egress.Resolver, OnConnection: pr.add})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	pctx, cancel := context.WithCancel(ctx)
	pr.cancel = cancel
	budget := egress.NewBudget(t.opts.Egress.Limits)
	go func() {
		defer close(pr.done)
		defer ln.Close()
		pr.err = p.Serve(pctx, ln, budget)
	}()
	return pr, nil
}

func (pr *proxyRun) add(r egress.Record) {
	pr.mu.Lock()
	pr.recs = append(pr.recs, r)
	pr.mu.Unlock()
}

// stop ends the proxy: the listener and every open connection close, and
// stop returns once each connection's record was delivered, ordered by
// when the connection was accepted. A nil proxyRun has none.
func (pr *proxyRun) stop() []egress.Record {
	if pr == nil {
		return nil
	}
	pr.cancel()
	<-pr.done
	pr.mu.Lock()
	defer pr.mu.Unlock()
	slices.SortStableFunc(pr.recs, func(a, b egress.Record) int { return a.Start.Compare(b.Start) })
	return pr.recs
}

// containerProxyRefused is why container mode aborts a proxy-mode run.
const containerProxyRefused = "proxy mode (ECTO_SANDBOX_NETWORK=proxy) needs a network namespace of the command's own whose only exit is the egress proxy, and container mode (ECTO_SANDBOX_CONTAINER_MODE=true) creates none: the command would share the container's network; fix: set ECTO_SANDBOX_NETWORK=none, or unset ECTO_SANDBOX_CONTAINER_MODE and let IronVise create namespaces (docs/reference/sandboxing.md#network-egress)"

// networkProxy is sandbox.Enforced.Network of a proxy-mode run.
const networkProxy = "proxy"
