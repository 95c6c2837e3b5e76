package server

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// access is who may call a route (docs/design/api.md#routes role column).
type access int

const (
	public    access = iota // P: no token
	anyRole                 // R: any valid token
	writeRole               // W: admin or agent
	adminRole               // A: admin
)

// limiter names the route's extra token bucket besides the global one.
type limiter int

const (
	limitNone    limiter = iota // public routes: no limit at all
	limitGlobal                 // g
	limitSession                // s: + session limiter
	limitSSE                    // e: + SSE limiter
)

// bodyKind is how the body stage treats a route
// (docs/design/api.md#bodies-and-status).
type bodyKind int

const (
	bodyNone    bodyKind = iota // ignored, never read
	bodyJSON                    // JSON content type, valid JSON
	bodyRawText                 // any content type, raw bytes (policy PUT)
)

// route is one method on one path pattern.
type route struct {
	method  string
	pattern string // metrics label, e.g. /api/sessions/{id}
	access  access
	limit   limiter
	body    bodyKind
	// op names the operation in 403 messages.
	op      string
	handler func(rc *reqCtx)
	// stream marks the SSE routes: HEAD answers the SSE headers and
	// closes, and no request-duration histogram is kept.
	stream bool
	// blockOnError, when set, answers every failure of the route — a
	// refused token, a body too large — instead of the JSON error
	// (hooks.go).
	blockOnError func(rc *reqCtx, status int, msg string)
}

// pathEntry holds every method of one pattern.
type pathEntry struct {
	pattern string
	segs    []string // literal segments, or "{name}" for a parameter
	methods map[string]*route
	allow   string // the Allow header value
}

// router matches decoded path segments against the route table.
type router struct {
	paths []*pathEntry
}

func (rt *router) add(r *route) {
	for _, p := range rt.paths {
		if p.pattern == r.pattern {
			p.methods[r.method] = r
			p.allow = allowHeader(p.methods)
			return
		}
	}
	p := &pathEntry{pattern: r.pattern, methods: map[string]*route{r.method: r}}
	if r.pattern != "/" {
		p.segs = strings.Split(strings.TrimPrefix(r.pattern, "/"), "/")
	}
	p.allow = allowHeader(p.methods)
	rt.paths = append(rt.paths, p)
}

func allowHeader(m map[string]*route) string {
	var ms []string
	for k := range m {
		ms = append(ms, k)
		if k == http.MethodGet {
			ms = append(ms, http.MethodHead)
		}
	}
	ms = append(ms, http.MethodOptions)
	sort.Strings(ms)
	return strings.Join(ms, ", ")
}

// match returns the entry of the decoded segments and the parameters, or nil.
// Literal segments win over parameters, so /api/config/tripwire never reads
// as a parameter.
func (rt *router) match(segs []string) (*pathEntry, map[string]string) {
	var best *pathEntry
	var bestParams map[string]string
	bestLiterals := -1
	for _, p := range rt.paths {
		if len(p.segs) != len(segs) {
			continue
		}
		params := map[string]string{}
		literals, ok := 0, true
		for i, s := range p.segs {
			if strings.HasPrefix(s, "{") {
				params[s[1:len(s)-1]] = segs[i]
				continue
			}
			if s != segs[i] {
				ok = false
				break
			}
			literals++
		}
		if ok && literals > bestLiterals {
			best, bestParams, bestLiterals = p, params, literals
		}
	}
	return best, bestParams
}

// pathProblem is why a raw path is refused: 400 or 404
// (docs/design/api.md#path-rules).
type pathProblem struct {
	status int
	msg    string
}

// splitPath splits the raw (still percent-encoded) request path on "/" and
// decodes each segment once. Segment boundaries come only from the raw
// path, so an encoded slash can never create a segment, and nothing is ever
// cleaned or redirected.
func splitPath(raw string) ([]string, *pathProblem) {
	if raw == "/" {
		return nil, nil
	}
	if !strings.HasPrefix(raw, "/") {
		return nil, &pathProblem{http.StatusBadRequest, "path must start with /"}
	}
	parts := strings.Split(raw[1:], "/")
	segs := make([]string, len(parts))
	empty := false
	for i, p := range parts {
		d, err := url.PathUnescape(p)
		if err != nil {
			return nil, &pathProblem{http.StatusBadRequest, "invalid percent-encoding in the path"}
		}
		// Dot segments are refused in any encoding: a server that cleaned
		// them would answer for a path the client did not name
		// (traversal), and one that redirected would leak tokens.
		if d == "." || d == ".." {
			return nil, &pathProblem{http.StatusBadRequest, "dot segments (. and ..) are not allowed in the path"}
		}
		for j := 0; j < len(d); j++ {
			c := d[j]
			if c == '/' || c == '\\' || c < 0x20 || c == 0x7f {
				return nil, &pathProblem{http.StatusBadRequest, "a path segment contains a slash, backslash or control character"}
			}
		}
		if d == "" {
			empty = true
		}
		segs[i] = d
	}
	if empty {
		return nil, &pathProblem{http.StatusNotFound, "not found (empty path segment)"}
	}
	return segs, nil
}
