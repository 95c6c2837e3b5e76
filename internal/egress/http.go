package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/ironvise/ironvise/internal/verdict"
)

// splitTarget splits host:port (port defaulting to def when absent).
func splitTarget(hostport string, def uint16) (string, uint16, error) {
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		if def == 0 || strings.Contains(strings.Trim(hostport, "[]"), ":") && !strings.HasPrefix(hostport, "[") {
			return "", 0, fmt.Errorf("%q is not host:port", hostport)
		}
		return strings.Trim(hostport, "[]"), def, nil
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || port == 0 || host == "" {
		return "", 0, fmt.Errorf("%q is not host:port with a port from 1 to 65535", hostport)
	}
	return host, uint16(port), nil
}

// refuseHTTP answers a refused proxy request with a one-line reason.
func (s *session) refuseHTTP(v verdict.Verdict) {
	status := http.StatusForbidden
	switch v.Code {
	case verdict.EgressUnresolvable, verdict.EgressDialFailed:
		status = http.StatusBadGateway
	case verdict.EgressBadRequest:
		status = http.StatusBadRequest
	}
	body := "ironvise egress: " + string(v.Code) + ": " + v.Message + "\n"
	fmt.Fprintf(s.client, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

func (s *session) http(ctx context.Context) verdict.Verdict {
	req, v := s.httpTarget(ctx)
	if v.Denied() {
		s.refuseHTTP(v)
		return v
	}
	if req.Method == http.MethodConnect {
		if _, err := s.client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
			return deny(verdict.EgressBadRequest, "the client left: %v", err)
		}
		return s.tunnel(v)
	}
	// One request per client connection: the server is asked to close,
	// and the proxy closes the client after the response.
	req.Close = true
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	s.up.SetDeadline(s.deadline)
	s.client.SetDeadline(s.deadline)
	w := &budgetWriter{s: s}
	if err := req.Write(w); err != nil {
		if w.capped {
			return s.capBytes(true)
		}
		return s.ioEnd(err, v)
	}
	return s.pump(s.client, s.up, false, v)
}

// httpTarget reads the proxy request and opens its target: the
// CONNECT host:port, or for plain HTTP the host of the absolute-form URI
// or of the Host header of an origin-form request. The request forwarded
// names req.Host, the host checked here.
func (s *session) httpTarget(ctx context.Context) (*http.Request, verdict.Verdict) {
	s.rec.Protocol = ProtoHTTP
	req, err := http.ReadRequest(s.br)
	if err != nil {
		return nil, deny(verdict.EgressBadRequest, "not an HTTP proxy request or SOCKS5 greeting: %v", err)
	}
	var host string
	var port uint16
	switch {
	case req.Method == http.MethodConnect:
		s.rec.Protocol = ProtoConnect
		if host, port, err = splitTarget(req.RequestURI, 0); err != nil {
			return nil, deny(verdict.EgressBadRequest, "CONNECT target: %v", err)
		}
	case req.URL.Scheme != "" && !strings.EqualFold(req.URL.Scheme, "http"):
		return nil, deny(verdict.EgressBadRequest, "scheme %q through the plain HTTP proxy; use CONNECT for https", req.URL.Scheme)
	case req.Host == "":
		return nil, deny(verdict.EgressBadRequest, "request without a host")
	default:
		if host, port, err = splitTarget(req.Host, 80); err != nil {
			return nil, deny(verdict.EgressBadRequest, "request host: %v", err)
		}
	}
	return req, s.open(ctx, host, port)
}

var errCap = errors.New("byte cap reached")

// budgetWriter writes the forwarded request upstream, charging the
// budget.
type budgetWriter struct {
	s      *session
	capped bool
}

func (w *budgetWriter) Write(p []byte) (int, error) {
	if !w.s.b.take(true, int64(len(p))) {
		w.capped = true
		return 0, errCap
	}
	n, err := w.s.up.Write(p)
	w.s.sent.Add(int64(n))
	return n, err
}
