package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxBodyBytes is the request body limit of every route
// (docs/design/api.md#bodies-and-status).
const MaxBodyBytes = 1 << 20

// reqCtx is one request on its way through the pipeline.
type reqCtx struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	id     string
	start  time.Time
	entry  *pathEntry
	route  *route
	params map[string]string
	ip     netip.Addr
	// who is the authenticated caller (nil on public routes).
	who *principal
	// body is the request body of JSON and raw routes, after the checks
	// of the body stage.
	body   []byte
	status int
	// hasBody reports a request that carries a body (it got a read
	// deadline).
	hasBody bool
}

func (rc *reqCtx) routeName() string {
	if rc.entry == nil {
		return "unmatched"
	}
	return rc.entry.pattern
}

// ServeHTTP implements http.Handler: the request pipeline of
// docs/design/api.md#request-pipeline, each stage answering or passing on, in
// this order.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := &reqCtx{s: s, w: w, r: r, start: time.Now()}
	h := w.Header()
	if id, ok := clientRequestID(r.Header.Get("X-Request-Id")); ok {
		rc.id = id
	} else {
		rc.id = newRequestID()
	}
	h.Set("X-Request-Id", rc.id)
	// A request that carries a body must deliver all of it within
	// ECTO_BODY_TIMEOUT_SECS, whatever happens to it: without a deadline
	// a client trickling uploads holds a connection and a goroutine for
	// ever (issue 13: 4,000 slow uploads were never closed), including
	// while net/http drains the body of a request refused before its body
	// was read. Requests without a body, event streams among them, get
	// none.
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		rc.hasBody = true
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.bodyTimeout()))
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// No response may be framed (clickjacking, a spoofed dashboard): the
	// CSP for browsers that read it, X-Frame-Options for older ones. The
	// dashboard's own CSP repeats frame-ancestors.
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "frame-ancestors 'none'")
	corsOK := s.setCORS(h, r.Header.Get("Origin"))
	defer s.observe(rc)

	segs, prob := splitPath(r.URL.EscapedPath())
	if prob == nil {
		rc.entry, rc.params = s.router.match(segs)
	}
	// 1. CORS preflight: any OPTIONS to a known path, before auth and
	// limits (browsers send preflights without credentials).
	if r.Method == http.MethodOptions && rc.entry != nil {
		h.Set("Allow", rc.entry.allow)
		if corsOK {
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, DELETE, OPTIONS")
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" && validHeaderList(req) {
				h.Set("Access-Control-Allow-Headers", req)
			} else {
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
			}
			h.Set("Access-Control-Max-Age", "600")
		}
		h.Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		rc.status = http.StatusOK
		return
	}
	// 2. Path check: never cleaned, never redirected.
	if prob != nil {
		rc.fail(&apiError{status: prob.status, msg: prob.msg})
		return
	}
	// 3. Route match.
	if rc.entry == nil {
		rc.fail(errf(http.StatusNotFound, "no such route: %s", r.URL.EscapedPath()))
		return
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	rc.route = rc.entry.methods[method]
	if rc.route == nil {
		h.Set("Allow", rc.entry.allow)
		rc.fail(errf(http.StatusMethodNotAllowed, "method %s is not allowed on %s (allowed: %s)", r.Method, rc.entry.pattern, rc.entry.allow))
		return
	}
	// 4. Public routes: no token, no limit.
	if rc.route.access == public {
		rc.route.handler(rc)
		return
	}
	rc.ip = s.clientIP(r)
	// 5. Global rate limit.
	if wait, ok := s.limits.global.take(rc.ip, time.Now()); !ok {
		rc.fail(s.limited("global", wait))
		return
	}
	// 6. Authentication; the body is not read for an unknown caller.
	who, err := s.authenticate(r)
	if err != nil {
		rc.fail(err)
		return
	}
	rc.who = who
	// 7. Role, decided from the route alone, before the body.
	if !who.may(rc.route.access) {
		rc.fail(errf(http.StatusForbidden, "role %s may not %s", who.role, rc.route.op))
		return
	}
	// 7b. Token scope: a token of scope own_sessions reaches only the
	// sessions it created (scope.go).
	if err := s.checkScope(rc); err != nil {
		rc.fail(err)
		return
	}
	// 8. The route's own limiter.
	switch rc.route.limit {
	case limitSession:
		if wait, ok := s.limits.session.take(rc.ip, time.Now()); !ok {
			rc.fail(s.limited("session", wait))
			return
		}
	case limitSSE:
		if wait, ok := s.limits.sse.take(rc.ip, time.Now()); !ok {
			rc.fail(s.limited("sse", wait))
			return
		}
	}
	// 9. Body.
	if err := rc.readBody(); err != nil {
		rc.fail(err)
		return
	}
	// 10. Handler.
	rc.route.handler(rc)
}

// readBody applies the body rules of docs/design/api.md#bodies-and-status.
//
// The body's deadline was set by ServeHTTP; it is lifted once the body is
// in, because net/http's background read would otherwise cancel the
// request of a long intent when it expires.
func (rc *reqCtx) readBody() error {
	if rc.r.ContentLength > MaxBodyBytes {
		return errf(http.StatusRequestEntityTooLarge, "request body of %d bytes exceeds the limit of %d bytes", rc.r.ContentLength, MaxBodyBytes)
	}
	switch rc.route.body {
	case bodyNone:
		return nil
	case bodyJSON:
		if !isJSONType(rc.r.Header.Get("Content-Type")) {
			return errf(http.StatusUnsupportedMediaType, "Content-Type must be application/json (got %q)", rc.r.Header.Get("Content-Type"))
		}
	}
	b, err := io.ReadAll(http.MaxBytesReader(rc.w, rc.r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			return errf(http.StatusRequestEntityTooLarge, "request body exceeds the limit of %d bytes", MaxBodyBytes)
		case errors.As(err, &ne) && ne.Timeout():
			rc.w.Header().Set("Connection", "close")
			return errf(http.StatusRequestTimeout, "the request body did not arrive within %s (ECTO_BODY_TIMEOUT_SECS); send it at once", rc.s.bodyTimeout())
		}
		return errf(http.StatusBadRequest, "reading the request body failed: %v", err)
	}
	if rc.hasBody {
		http.NewResponseController(rc.w).SetReadDeadline(time.Time{})
	}
	rc.body = b
	if rc.route.body != bodyJSON {
		return nil
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return errf(http.StatusBadRequest, "empty body: send a JSON value")
	}
	if !utf8.Valid(b) {
		return errf(http.StatusBadRequest, "the body is not valid UTF-8")
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		if err == nil {
			err = errors.New("trailing data after the JSON value")
		}
		return errf(http.StatusBadRequest, "invalid JSON: %v", err)
	}
	return nil
}

// isJSONType accepts application/json and application/<x>+json, case
// insensitive, parameters ignored.
func isJSONType(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	mt = strings.ToLower(mt)
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// validHeaderList accepts a comma list of header tokens, so a preflight
// cannot echo arbitrary bytes back.
func validHeaderList(s string) bool {
	if len(s) > 1024 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_ ,", c) >= 0) {
			return false
		}
	}
	return true
}

// setCORS adds the CORS response headers for an allowed origin and reports
// whether the origin is allowed (docs/design/api.md#cors). Credentials are
// never allowed: auth travels in a header or the query, not cookies.
func (s *Server) setCORS(h http.Header, origin string) bool {
	if origin == "" {
		return false
	}
	if s.corsAny {
		h.Set("Access-Control-Allow-Origin", "*")
		return true
	}
	if _, ok := s.corsOrigins[origin]; ok {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		return true
	}
	return false
}

// limited is the 429 of limiter name.
func (s *Server) limited(name string, wait time.Duration) *apiError {
	secs := int((wait + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	s.metrics.rateLimited.WithLabelValues(name).Inc()
	return &apiError{status: http.StatusTooManyRequests, msg: fmt.Sprintf("rate limit exceeded; retry in %ds", secs), retryAfter: secs}
}

// observe records the request in the metrics (route pattern and code only:
// labels never carry ids or tokens).
func (s *Server) observe(rc *reqCtx) {
	code := rc.status
	if code == 0 {
		code = http.StatusOK
	}
	name := rc.routeName()
	s.metrics.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
	if rc.route == nil || !rc.route.stream {
		s.metrics.requestSeconds.WithLabelValues(name).Observe(time.Since(rc.start).Seconds())
	}
	s.log.Debug("request", "request_id", rc.id, "method", rc.r.Method, "route", name, "status", code, "duration", time.Since(rc.start))
}
