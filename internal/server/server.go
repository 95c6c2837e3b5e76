package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
	"github.com/ironvise/ironvise/internal/localsock"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/session"
	"github.com/ironvise/ironvise/internal/webhook"
)

// Options configure a Server. Config, Workspace and Tier are required.
type Options struct {
	// Config is the validated environment (internal/config); settings.json
	// in its data dir is applied on top
	// (docs/design/api.md#config-and-tripwire).
	Config *config.Config
	// Lookup reads the environment for the guard workers' environment.
	Lookup config.Lookup
	// Workspace is the absolute, symlink-resolved directory API sessions
	// work in.
	Workspace string
	// Protected is the protected-path list the composition root computed
	// at start (secretpaths.Compute); every session's tripwire refuses
	// its paths, and the Tier was built to hide the same ones. Required:
	// an empty list would leave the data directory open to the sessions.
	Protected secretpaths.List
	// Tier is the selected sandbox tier; its self-test runs before the
	// listener opens.
	Tier sandbox.Tier
	// VerifyFull verifies the whole ledger at startup (serve --verify-full)
	// instead of its tail.
	VerifyFull bool
	// GuardFlags are serve's --no-guard and --no-guard-confirmed: they
	// turn the guard off for every session this server starts, as they do
	// for one audit.
	GuardFlags guard.Flags
	// Version is reported by /api/status.
	Version string
	// Stdout receives the one-run token lines; Stderr the listening line.
	Stdout, Stderr io.Writer
	// Logger receives operational messages (nil: warnings and errors to
	// Stderr). Nothing is logged per request above debug level.
	Logger *slog.Logger
	// GuardExecutable is the binary started as `guard-worker` for each
	// session ("" means this executable). Tests point it elsewhere.
	GuardExecutable string
	// EnclaveRoots replaces the pinned AWS Nitro root when a remote guard
	// enclave is attested. Tests only: no command or variable sets it.
	EnclaveRoots *x509.CertPool
	// SandboxEnv is the candidate environment of sandboxed commands.
	SandboxEnv []string
	// FeedPoll is how often the event feed looks for events committed by
	// other instances (default 200 ms; local commits wake it at once).
	FeedPoll time.Duration
	// ApprovalPoll is how often a waiting approval gate reads the table
	// (default 100 ms; local decisions wake it at once).
	ApprovalPoll time.Duration
	// StreamWriteTimeout bounds one write to an event stream; a client
	// that does not read for this long is dropped (default 10 s).
	StreamWriteTimeout time.Duration
	// LeaseDuration is the ledger's session lease
	// (docs/design/ledger.md#session-lifecycle; zero is 30 s) and WriteTimeout
	// the deadline of each ledger write of a step (zero is
	// agent.DefaultWriteTimeout). Tests shorten both so that a command outlasts
	// them.
	LeaseDuration, WriteTimeout time.Duration
	// Local, when set, serves `ironvise exec` on the data directory's Unix
	// socket (localexec.go).
	Local LocalExec
}

// Server is one `ironvise serve` instance. Create it with New, then Start;
// the caller must call Shutdown.
type Server struct {
	opts  Options
	cfg   *config.Config
	log   *slog.Logger
	start time.Time

	router  router
	limits  rateLimits
	tokens  tokenCache
	metrics *metrics

	corsAny     bool
	corsOrigins map[string]struct{}

	// owner is the data directory's owner id and its lock (owner.go); nil
	// when another process holds it or the OS cannot lock it, and the
	// ledger then uses a per-process id.
	owner *ownerLock

	// lmu guards l, which reset-demo replaces.
	lmu         sync.RWMutex
	l           *ledger.Ledger
	target      ledgerdb.Target
	backendKind string

	scanner  *scan.Scanner
	settings *settingsStore
	sandbox  *sandboxState

	genToken string // the one-run admin token ("" when OBSERVER_TOKEN is set)

	hooks *webhook.Dispatcher // SIEM egress

	feed    *feed
	sec     *secWindow
	runners *runners
	twCache tripwireCache // the compiled tripwire sessions share (idle.go)
	wake    *broadcast    // decisions stored by this process
	mcp     mcpHTTP       // the /mcp transport (mcp.go)

	// bg is the context of everything the server runs in the background
	// (sessions, the feed); stop cancels it at shutdown.
	bg   context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
	// inflight counts handlers that keep working after their client left
	// (intents), so Shutdown waits for them before closing the ledger.
	inflight sync.WaitGroup

	// streamsDone ends every open stream (shutdown); resetMu guards
	// streamsReset, which a demo reset closes and replaces.
	streamsDone  chan struct{}
	resetMu      sync.Mutex
	streamsReset chan struct{}

	errLog *errLogger // failed requests, rate-limited (errlog.go)

	verifyFailures atomic.Int64
	streams        atomic.Int64 // open event streams

	// conns counts open client connections against the global and
	// per-address caps (connlimit.go); connWG tracks the goroutines that
	// answer refused connections.
	conns  *connLimiter
	connWG sync.WaitGroup
	// fresh are the connections that have sent no request yet, which
	// Shutdown closes (freshconns.go).
	fresh freshConns

	httpSrv *http.Server
	ln      net.Listener
	local   *localsock.Listener // the exec socket (nil: none)
	closed  atomic.Bool
	// shutdownSteps are how long each step of Shutdown took, in order
	// (written by Shutdown alone; tests read them after it returned).
	shutdownSteps []shutdownStep
}

// shutdownStep is one step of Shutdown and how long it took.
type shutdownStep struct {
	name string
	took time.Duration
}

// slowShutdownStep is how long a step of Shutdown may take before the log
// says so: a shutdown that waits on one of its bounds (the guard worker's
// stop, the webhooks' drain, the grace period) is then explained.
const slowShutdownStep = time.Second

// timeStep runs one step of Shutdown, records how long it took, and logs
// it when it was slow.
func (s *Server) timeStep(name string, f func()) {
	start := time.Now()
	f()
	d := time.Since(start)
	s.shutdownSteps = append(s.shutdownSteps, shutdownStep{name, d})
	if d >= slowShutdownStep {
		s.log.Warn("server: a shutdown step was slow", "step", name, "took", d.Round(time.Millisecond))
	}
}

// New prepares a server: steps 1–5 of docs/design/api.md#server-config's
// startup order. Nothing listens yet; on error everything opened so far is
// closed again.
func New(ctx context.Context, o Options) (srv *Server, err error) {
	if o.Config == nil || o.Tier == nil || o.Workspace == "" || len(o.Protected.Paths) == 0 {
		return nil, errors.New("server: Config, Tier, Workspace and Protected are required")
	}
	// Every API session works in this workspace: the same refusal as the
	// CLI's (the file-system root, a system directory, or inside a
	// protected path).
	if err := secretpaths.CheckWorkspace(o.Workspace, o.Protected); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Lookup == nil {
		o.Lookup = config.MapLookup(nil)
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = 10 * time.Second
	}
	if o.FeedPoll <= 0 {
		o.FeedPoll = 200 * time.Millisecond
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(o.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	s := &Server{opts: o, log: log, start: time.Now(), streamsDone: make(chan struct{}), streamsReset: make(chan struct{}), wake: newBroadcast(),
		errLog: newErrLogger(log)}
	s.bg, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			s.stop()
			if s.hooks != nil {
				s.hooks.Close(context.Background())
			}
			if l := s.l; l != nil {
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				l.Close(cctx)
				cancel()
			}
			s.owner.release()
		}
	}()

	// (1) Configuration: settings.json over the environment, then the
	// files the sessions will read, so a broken file stops serve now.
	cfg := *o.Config
	s.settings, err = openSettings(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s.cfg = s.settings.apply(&cfg)
	if err := s.checkStartupFiles(); err != nil {
		return nil, err
	}
	if _, err := s.guardPlan(); err != nil {
		return nil, err
	}
	if s.scanner, err = session.NewScanner(s.cfg.Scanner.Sensitivity); err != nil {
		return nil, err
	}
	sc := s.cfg.Server
	s.limits = rateLimits{
		global:  newBuckets(sc.APIRate, sc.APIBurst),
		session: newBuckets(sc.SessionRate, sc.SessionBurst),
		sse:     newBuckets(sc.SSERate, sc.SSEBurst),
	}
	s.tokens.m = map[string]cachedToken{}
	s.corsAny = sc.CORSOrigins == nil
	s.corsOrigins = map[string]struct{}{}
	for _, o := range sc.CORSOrigins {
		s.corsOrigins[o] = struct{}{}
	}
	capConns, err := connectionCap(sc.MaxConnections, fdLimit())
	if err != nil {
		return nil, err
	}
	s.conns = newConnLimiter(capConns, sc.MaxConnectionsPerIP, s.trusted)
	s.metrics = newMetrics(s)
	s.routes()
	s.runners = newRunners()
	s.sec = newSecWindow()

	// The owner id this process leases sessions under (owner.go).
	switch s.owner, err = acquireOwner(s.cfg.DataDir); {
	case errors.Is(err, errOwnerLocked), errors.Is(err, errors.ErrUnsupported):
		s.log.Warn("sessions of this serve are leased under a per-process owner id: after a crash they are recovered when their lease lapses, not reclaimed at the next start", "reason", err)
		s.owner = nil
	case err != nil:
		return nil, err
	}
	// (1, 3) The database with its migrations; the ledger creates the
	// issuer key, and on an empty ledger the instance genesis and the
	// first checkpoint.
	if err := s.openLedger(ctx); err != nil {
		return nil, err
	}
	// (2) Tokens.
	if s.genToken, err = s.bootstrapTokens(ctx); err != nil {
		return nil, err
	}
	// (4) Crash recovery, then the ledger's verification: refuse to start
	// on tampering.
	if _, err := s.ledger().Recover(ctx); err != nil {
		return nil, fmt.Errorf("server: ledger recovery: %w", err)
	}
	if err := s.reclaim(ctx); err != nil {
		return nil, fmt.Errorf("server: reclaim the sessions of the previous process: %w", err)
	}
	var rep ledger.StartupReport
	if o.VerifyFull {
		rep, err = s.verifyFull(ctx)
	} else {
		rep, err = s.ledger().VerifyStartup(ctx)
	}
	if err == nil {
		err = rep.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("server: ledger verification failed, refusing to serve it (run 'ironvise verify-session' on the sessions named, or restore the database): %w", err)
	}
	if err := s.startWebhooks(); err != nil {
		return nil, fmt.Errorf("server: webhooks: %w", err)
	}
	// (5) The sandbox self-test.
	s.sandbox = newSandboxState(s)
	if err := s.sandbox.selfTest(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// openLedger opens the configured database behind the observing wrapper.
func (s *Server) openLedger(ctx context.Context) error {
	b, t, err := ledgerdb.OpenBackend(ctx, s.cfg.Ledger.DatabaseURL, s.cfg.DataDir, s.cfg.Ledger.PoolSize)
	if err != nil {
		return fmt.Errorf("server: open the ledger: %w", err)
	}
	s.target, s.backendKind = t, b.Kind()
	wrapped := &observedBackend{Backend: b, committed: s.committed}
	l, err := ledger.New(ctx, wrapped, s.ledgerOptions())
	if err != nil {
		b.Close()
		return fmt.Errorf("server: open the ledger: %w", err)
	}
	s.lmu.Lock()
	s.l = l
	s.lmu.Unlock()
	return nil
}

// rememberDelay is how long serve gathers checkpoints before it remembers
// the newest outside the database.
const rememberDelay = 100 * time.Millisecond

func (s *Server) ledgerOptions() ledger.Options {
	lc := s.cfg.Ledger
	o := ledger.Options{
		DataDir: s.cfg.DataDir, IssuerKeyFile: lc.IssuerKeyFile, Passphrase: ledger.Secret(lc.KeyPassphrase.Reveal()),
		CheckpointEvents: lc.CheckpointEvents, CheckpointInterval: time.Duration(lc.CheckpointSecs) * time.Second,
		Logger: s.log, LeaseDuration: s.opts.LeaseDuration,
		// Each exec through serve seals a session of its own, which
		// signs a checkpoint: the remembered copy is written (and
		// fsynced) once per delay, not once per command
		// (docs/ledger.md#rollback-and-forks).
		CheckpointFileDelay: rememberDelay,
	}
	if s.owner != nil {
		o.OwnerID = s.owner.id
	}
	if s.target.Kind == ledgerdb.KindMemory {
		// An in-memory ledger starts empty by design: no checkpoint to
		// remember (ledgerdb.Open does the same for the CLI).
		o.CheckpointFile = "-"
	}
	return o
}

// ledger returns the current ledger.
func (s *Server) ledger() *ledger.Ledger {
	s.lmu.RLock()
	defer s.lmu.RUnlock()
	return s.l
}

// committed is called after every write transaction of this process that
// added events.
func (s *Server) committed(evs []ledger.Event, d time.Duration) {
	s.metrics.committed(s.backendKind, evs, d)
	if f := s.feed; f != nil {
		f.offer(evs)
	}
	s.notifyWebhooks(evs)
}

// Start opens the listener (step 6), prints the one-run token and the
// address, and serves in the background.
func (s *Server) Start(ctx context.Context) error {
	sc := s.cfg.Server
	addr := net.JoinHostPort(sc.BindHost, strconv.Itoa(sc.BindPort))
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w (set ECTO_BIND_HOST/ECTO_BIND_PORT, or stop what uses the port)", addr, err)
	}
	s.ln = &limitListener{Listener: ln, lim: s.conns, wg: &s.connWG}
	if !isLoopbackHost(sc.BindHost) {
		s.log.Warn("listening on a non-loopback address: tokens travel in clear text unless TLS is terminated in front of IronVise", "host", sc.BindHost)
	}
	if s.cfg.Sandbox.Permissive {
		s.log.Warn("ECTO_SANDBOX_PERMISSIVE=true: commands of API sessions run WITHOUT OS confinement (each run is recorded as permissive); development only")
	}
	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		// A short idle timeout frees the connections keep-alive clients
		// forget (issue 13). There is deliberately no ReadTimeout or
		// WriteTimeout: they would cut event streams and long intents;
		// request bodies get their own deadline (readBody).
		IdleTimeout:    time.Duration(sc.IdleTimeoutSecs) * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:    func(net.Listener) context.Context { return s.bg },
		ConnState:      s.fresh.track,
	}
	s.feed = newFeed(s)
	s.wg.Add(3)
	go func() { defer s.wg.Done(); s.feed.run() }()
	go func() { defer s.wg.Done(); s.housekeeping() }()
	go func() { defer s.wg.Done(); s.sec.backfill(s.bg, s, s.feed.startIndex()) }()
	s.sandbox.startDoctor()
	host := displayHost(sc.BindHost)
	port := ln.Addr().(*net.TCPAddr).Port
	base := "http://" + net.JoinHostPort(host, strconv.Itoa(port))
	if s.genToken != "" {
		// Printed once, to stdout only; never logged
		// (docs/design/api.md#token-bootstrap).
		fmt.Fprintf(s.opts.Stdout, "OBSERVER_TOKEN is not set; generated a one-run admin token: %s\nDashboard: %s/?token=%s\n", s.genToken, base, s.genToken)
	}
	fmt.Fprintf(s.opts.Stderr, "listening on %s\n", base)
	s.startLocal()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.httpSrv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("server: serve failed", "err", err)
		}
	}()
	return nil
}

// Addr returns the listener's address ("" before Start).
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL returns the base URL clients use ("" before Start).
func (s *Server) URL() string {
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// ShutdownGrace bounds how long in-flight requests may finish at shutdown.
const ShutdownGrace = 10 * time.Second

// Shutdown stops the server gracefully (docs/design/api.md#server-config): no
// new connections, open streams end, in-flight requests get ShutdownGrace to
// finish, the running sessions are stopped and their end recorded, the
// one-run token is deleted, and the ledger writes its final checkpoint and
// closes.
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.streamsDone)
	s.timeStep("end the MCP connections", s.endMCPConnections)
	s.timeStep("close the exec socket", s.stopLocal)
	var errs []error
	if s.httpSrv != nil {
		s.timeStep("stop the HTTP server", func() {
			sctx, cancel := context.WithTimeout(ctx, ShutdownGrace)
			if err := s.fresh.closingDuring(func() error { return s.httpSrv.Shutdown(sctx) }); err != nil {
				s.httpSrv.Close()
			}
			cancel()
		})
	}
	// Stop the sessions: loops record halt_interrupted and seal
	// themselves; externally driven sessions are ended aborted.
	s.timeStep("stop the running sessions", func() { s.runners.stopAll(ctx) })
	s.timeStep("seal the MCP sessions", func() {
		if err := s.closeMCP(ctx); err != nil {
			errs = append(errs, err)
		}
	})
	s.timeStep("wait for the requests and background work", func() {
		s.stop()
		s.inflight.Wait()
		s.wg.Wait()
		s.connWG.Wait()
	})
	if s.genToken != "" {
		s.timeStep("delete the one-run token", func() {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := s.ledger().DeleteToken(dctx, TokenHash(s.genToken)); err != nil && !errors.Is(err, ledger.ErrNotFound) {
				errs = append(errs, fmt.Errorf("server: delete the one-run token: %w", err))
			}
			cancel()
		})
	}
	if s.hooks != nil {
		s.timeStep("drain the webhooks", func() {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := s.hooks.Close(wctx); err != nil {
				s.log.Warn("webhook: undelivered notifications at shutdown", "err", err)
			}
			cancel()
		})
	}
	s.timeStep("close the ledger", func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := s.ledger().Close(cctx); err != nil {
			errs = append(errs, fmt.Errorf("server: close the ledger: %w", err))
		}
	})
	s.owner.release()
	return errors.Join(errs...)
}

// housekeeping drops idle rate-limit buckets and makes idle API sessions
// dormant (idle.go).
func (s *Server) housekeeping() {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	idle := time.Duration(s.cfg.Server.SessionIdleSecs) * time.Second
	e := time.NewTicker(min(max(idle/4, 250*time.Millisecond), 30*time.Second))
	defer e.Stop()
	// Orphans of other processes are failed as soon as their lease lapses,
	// not at some later start (issue 13, item 4).
	r := time.NewTicker(s.leaseDuration() / 3)
	defer r.Stop()
	for {
		select {
		case <-s.bg.Done():
			return
		case now := <-t.C:
			s.limits.sweep(now)
		case now := <-e.C:
			if n := s.evictIdle(now, idle); n > 0 {
				s.log.Debug("idle API sessions made dormant", "sessions", n)
			}
			s.errLog.flush()
		case <-r.C:
			if _, err := s.ledger().Recover(s.bg); err != nil && s.bg.Err() == nil {
				s.log.Warn("recover sessions of stopped instances", "err", err)
			}
		}
	}
}

// leaseDuration is the ledger's session lease.
func (s *Server) leaseDuration() time.Duration {
	if s.opts.LeaseDuration > 0 {
		return s.opts.LeaseDuration
	}
	return ledger.DefaultLeaseDuration
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// displayHost is the host printed in URLs: the wildcard addresses are shown
// as localhost.
func displayHost(h string) string {
	if h == "0.0.0.0" || h == "::" {
		return "localhost"
	}
	return h
}

// streamsEnded returns a channel closed when open streams must end
// (shutdown or a demo reset).
func (s *Server) resetChan() chan struct{} {
	s.resetMu.Lock()
	defer s.resetMu.Unlock()
	return s.streamsReset
}

// guardPlan resolves the guard for new sessions
// (docs/design/checks.md#guard-protocol): required but unconfigured is a
// startup error, and a 503 for sessions after a configuration change.
func (s *Server) guardPlan() (guard.Plan, error) {
	c := s.sessionConfig()
	p, err := guard.Resolve(c.Guard, c.LLM.Backend, s.opts.GuardFlags)
	if err != nil {
		return p, fmt.Errorf("server: %w", err)
	}
	return p, nil
}

func (s *Server) openStreams() int64 { return s.streams.Load() }

// bodyTimeout is how long a request body may take (ECTO_BODY_TIMEOUT_SECS).
func (s *Server) bodyTimeout() time.Duration {
	return time.Duration(s.cfg.Server.BodyTimeoutSecs) * time.Second
}
