package container

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ironvise/ironvise/internal/egress"
)

// Proxy mode (Request.Egress non-nil, ECTO_SANDBOX_NETWORK=proxy).
//
// The container runs in a network namespace IronVise creates for it
// (newProxyNamespace): loopback only, as with --network=none, plus the
// egress proxy's listener at ProxyAddr, which IronVise serves from its own
// namespace. The runtime joins that namespace (--network=ns:PATH) instead of
// creating an empty one. Creating the namespace ahead, rather than
// entering the one `podman init` creates, keeps a run one `podman run`:
// the passthrough log driver (conmon hands the command the stdio of the
// client that creates the container, which `podman init` would be), the
// timeout and the removal by name all stay as in mode none.

// ProxyAddr is where the command reaches the egress proxy inside its
// container: loopback of the container's own network namespace, which no
// other process shares. 3128 is the customary proxy port.
const ProxyAddr = "127.0.0.1:3128"

// ProxyURL is the value of the proxy variables (ProxyEnv).
const ProxyURL = "http://" + ProxyAddr

// ProxyEnv returns the variables a proxy-mode command gets, overriding any
// the caller passed: HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name the proxy
// (one port speaks HTTP, CONNECT and SOCKS5; http:// is the scheme curl,
// Python, pip, git, npm and busybox wget all take), NO_PROXY is empty
// (nothing bypasses it; nothing could, there being no other route), each
// in upper and lower case because tools read one or the other.
func ProxyEnv() map[string]string {
	env := map[string]string{}
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env[name] = ProxyURL
	}
	env["NO_PROXY"] = ""
	for k, v := range env {
		env[strings.ToLower(k)] = v
	}
	return env
}

// proxyRefusal explains why proxy mode cannot be applied with this runtime
// on this host, and the fix; "" when it can. Proxy mode needs IronVise to
// create the container's network namespace, which takes a local, rootful
// Podman on Linux.
//
// Security: where it cannot be applied the run aborts; the command never
// runs with the runtime's default bridge or slirp network instead, which
// would reach everything the host reaches.
func proxyRefusal(rt, goos string, euid int, remote bool) (reason, fix string) {
	const otherwise = "or use the native tier, or set ECTO_SANDBOX_NETWORK=none"
	switch {
	case rt != "podman":
		return "the Docker daemon creates each container's network namespace itself, so IronVise cannot place the egress proxy inside it",
			"set ECTO_DOCKER_RUNTIME=podman and run IronVise as root on Linux, " + otherwise
	case goos != "linux":
		return "the egress proxy is placed in the container's network namespace, which needs a Linux host",
			"run IronVise on the Linux host of the containers, " + otherwise
	case remote:
		return "Podman is remote (a podman machine or CONTAINER_HOST): its containers' network namespaces are on another machine",
			"run IronVise as root on the machine that runs the containers, " + otherwise
	case euid != 0:
		return "rootless Podman: creating the container's network namespace for the egress proxy needs root (CAP_SYS_ADMIN)",
			"run IronVise as root with rootful Podman, " + otherwise
	}
	return "", ""
}

// egressRun is the egress proxy of one proxy-mode run: its namespace, the
// goroutine serving it, and the records of the connections.
type egressRun struct {
	ns     *proxyNamespace
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve returned
	once   sync.Once

	mu      sync.Mutex
	records []egress.Record // guarded by mu
	serve   error           // guarded by mu; Serve's error
}

// startEgress creates the run's namespace and serves the proxy in it until
// stop. The caller must call stop.
func (t *Tier) startEgress(ctx context.Context, rules *egress.Rules) (*egressRun, error) {
	e := &egressRun{done: make(chan struct{})}
	p, err := egress.New(egress.Config{
		Rules: rules, Resolver: t.opts.Egress.Resolver,
		// Records arrive from the connections' goroutines.
		OnConnection: func(r egress.Record) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.records = append(e.records, r)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("configure the egress proxy: %w", err)
	}
	if e.ns, err = newProxyNamespace(); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	budget := egress.NewBudget(t.opts.Egress.Limits)
	go func() {
		defer close(e.done)
		err := p.Serve(sctx, e.ns.Listener, budget)
		e.mu.Lock()
		defer e.mu.Unlock()
		e.serve = err
	}()
	return e, nil
}

// stop ends the proxy — every connection still open is closed — waits for
// every record, and returns them in the order the connections ended, with
// the error that stopped the proxy early, if any. Called once the container
// is gone, so no connection can still arrive; later calls return the same.
func (e *egressRun) stop() ([]egress.Record, error) {
	e.once.Do(func() {
		e.cancel()
		<-e.done
		e.ns.Close()
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.records, e.serve
}
