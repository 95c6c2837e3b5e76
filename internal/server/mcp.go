package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/mcpserver"
	"github.com/ironvise/ironvise/internal/session"
)

// mcpSessionTimeout closes an MCP connection no request used for this
// long; its IronVise session is then ended and sealed.
const mcpSessionTimeout = 30 * time.Minute

// mcpHTTP is the streamable HTTP transport of `ironvise mcp` at /mcp
// (docs/integrations.md#mcp): every MCP session is an IronVise session
// created by the token that initialised it, enforcing the server's
// workspace, tripwire and guard, with no policy (as a session created
// without one).
type mcpHTTP struct {
	once    sync.Once
	handler http.Handler
	// svc is set once the transport is built (by the first request).
	svc atomic.Pointer[mcpserver.Service]

	mu sync.Mutex
	// owners maps an MCP session id to the token that initialised it:
	// another token cannot use the session.
	owners map[string]principal
}

// mcpService returns the /mcp transport, built on first use.
func (s *Server) mcpService() *mcpHTTP {
	m := &s.mcp
	m.once.Do(func() {
		m.owners = map[string]principal{}
		svc := mcpserver.New(mcpserver.Options{Transport: "http", Version: s.opts.Version,
			Runtime: s.sessionRuntime, Spec: s.mcpSpec})
		m.svc.Store(svc)
		m.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return svc.Server },
			&mcp.StreamableHTTPOptions{SessionTimeout: mcpSessionTimeout, Logger: s.log,
				// The API's own checks run first (token, rate limits, CORS,
				// body limits), as on every route; the SDK's Host check would
				// refuse a server bound to loopback behind a proxy.
				DisableLocalhostProtection: true})
	})
	return m
}

// mcpSpec is what the session of a new MCP connection enforces. It takes
// a place under the caps of sessions waiting for intents
// (ECTO_MAX_IDLE_SESSIONS, ECTO_MAX_IDLE_SESSIONS_PER_TOKEN), as an API
// session without the loop does, until the session is sealed.
func (s *Server) mcpSpec(ctx context.Context, extra *mcp.RequestExtra) (spec session.Spec, release func(), err error) {
	var who principal
	ok := false
	if extra != nil {
		m := &s.mcp
		m.mu.Lock()
		who, ok = m.owners[extra.Header.Get("Mcp-Session-Id")]
		m.mu.Unlock()
	}
	if !ok {
		return spec, nil, errf(http.StatusUnauthorized, "the MCP session has no owner token")
	}
	cfg := s.sessionConfig()
	if err := s.runners.reserve(who.actor(), cfg.Server.MaxIdleSessions, cfg.Server.MaxIdleSessionsPerToken); err != nil {
		return spec, nil, err
	}
	defer func() {
		if err != nil {
			s.runners.unreserve(who.actor())
		}
	}()
	plan, err := guard.Resolve(cfg.Guard, cfg.LLM.Backend, s.opts.GuardFlags)
	if err != nil {
		return spec, nil, errf(http.StatusServiceUnavailable, "the guard is required but not configured: %v", err)
	}
	_, tw, err := s.sessionTripwire(cfg)
	if err != nil {
		return spec, nil, err
	}
	g, err := s.startGuard(ctx, plan, cfg)
	if err != nil {
		return spec, nil, err
	}
	spec = s.sessionSpec(cfg, tw, nil, g)
	spec.CreatedBy = who.hash
	return spec, func() {
		g.Close()
		s.runners.unreserve(who.actor())
	}, nil
}

// handleMCP serves /mcp: POST (messages), GET (the server's stream) and
// DELETE (end the session).
func (s *Server) handleMCP(rc *reqCtx) {
	m := s.mcpService()
	sid := rc.r.Header.Get("Mcp-Session-Id")
	if sid != "" {
		m.mu.Lock()
		owner, ok := m.owners[sid]
		m.mu.Unlock()
		if !ok || owner.hash != rc.who.hash {
			// Unknown, or another token's: the same answer, so a session
			// id reveals nothing.
			rc.fail(errf(http.StatusNotFound, "no MCP session %q for this token: initialise a new one (POST /mcp without Mcp-Session-Id)", sid))
			return
		}
		if rc.r.Method == http.MethodDelete {
			defer func() {
				m.mu.Lock()
				delete(m.owners, sid)
				m.mu.Unlock()
			}()
		}
	}
	if rc.r.Method == http.MethodHead {
		// HEAD answers as GET would, without holding a stream open.
		if sid != "" {
			rc.w.Header().Set("Content-Type", "text/event-stream")
			rc.w.Header().Set("Cache-Control", "no-cache")
			rc.w.WriteHeader(http.StatusOK)
			rc.status = http.StatusOK
			return
		}
		rc.r = rc.r.Clone(rc.r.Context())
		rc.r.Method = http.MethodGet
	}
	if rc.r.Method == http.MethodPost {
		// The body stage has read and checked the body; the SDK reads it
		// again.
		rc.r.Body = io.NopCloser(bytes.NewReader(rc.body))
		rc.r.ContentLength = int64(len(rc.body))
	}
	w := &mcpOwnerWriter{ResponseWriter: rc.w, m: m, owner: *rc.who, known: sid != ""}
	m.handler.ServeHTTP(w, rc.r)
	rc.status = w.status
}

// endMCPConnections closes every open MCP connection at shutdown, before
// the HTTP server waits for its requests: a client's server stream (GET
// /mcp) would otherwise hold the shutdown for its whole grace period.
func (s *Server) endMCPConnections() {
	svc := s.mcp.svc.Load()
	if svc == nil {
		return
	}
	for _, ss := range slices.Collect(svc.Server.Sessions()) {
		ss.Close()
	}
}

// closeMCP ends and seals the session of every MCP connection.
func (s *Server) closeMCP(ctx context.Context) error {
	svc := s.mcp.svc.Load()
	if svc == nil {
		return nil
	}
	return svc.Close(ctx)
}

// mcpOwnerWriter records the owner of the session id an initialisation
// answers with, before the answer leaves.
type mcpOwnerWriter struct {
	http.ResponseWriter
	m      *mcpHTTP
	owner  principal
	known  bool
	status int
}

func (w *mcpOwnerWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if sid := w.Header().Get("Mcp-Session-Id"); sid != "" && !w.known {
			w.m.mu.Lock()
			w.m.owners[sid] = w.owner
			w.m.mu.Unlock()
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *mcpOwnerWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes streaming through.
func (w *mcpOwnerWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *mcpOwnerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
