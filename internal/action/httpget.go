package action

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// DefaultHTTPTimeout bounds one http_get, redirects included.
const DefaultHTTPTimeout = 30 * time.Second

// HTTP performs http_get. The zero value is not usable: set Tripwire.
type HTTP struct {
	Tripwire *tripwire.Tripwire
	// TLS overrides the TLS client configuration (tests trust a local CA).
	TLS *tls.Config
	// Timeout defaults to DefaultHTTPTimeout.
	Timeout time.Duration
}

// HTTPResult is the outcome of a request that was allowed to run.
type HTTPResult struct {
	Status      int
	StatusText  string
	ContentType string
	FinalURL    string
	Body        Output
}

// ErrRedirectBlocked is wrapped by Get when a redirect hop failed the
// tripwire; the hop's verdict is in the returned list.
var ErrRedirectBlocked = errors.New("action: redirect blocked by the tripwire")

// Get fetches rawURL. checked is the address set the tripwire resolved
// when it allowed the intent (docs/design/checks.md#tripwire-urls step 8: the
// request dials only that set, so a DNS answer that changes after the check
// cannot move it); with none, the URL is checked and resolved here. It
// returns the verdicts reached at execute time (the first request when it was
// checked here, and every redirect hop; phase "execute"); a denied one ends
// the request. err is set for transport failures and blocked redirects, and
// then the result is nil.
func (h *HTTP) Get(ctx context.Context, rawURL string, checked []netip.Addr) (*HTTPResult, []verdict.Verdict, error) {
	tw := h.Tripwire
	var verdicts []verdict.Verdict
	addrs := checked
	if len(addrs) == 0 {
		var v verdict.Verdict
		addrs, v = tw.CheckURL(ctx, rawURL, 0)
		verdicts = append(verdicts, v)
		if v.Denied() {
			return nil, verdicts, nil
		}
	}
	allowed := &addrSet{m: map[string][]netip.Addr{}}
	allowed.set(rawURL, addrs)
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	transport := &http.Transport{
		// Proxy variables are ignored: a proxy would choose the peer.
		Proxy:               nil,
		TLSClientConfig:     h.TLS,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
		DisableKeepAlives:   true,
		DialContext: func(ctx context.Context, network, hostport string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(hostport)
			if err != nil {
				return nil, err
			}
			set := allowed.get(strings.ToLower(host))
			if len(set) == 0 {
				return nil, fmt.Errorf("dial %s: no checked address for this host", host)
			}
			d := *dialer
			// The kernel-level peer address is checked once more on
			// connect, so nothing but the checked set is ever reached.
			d.Control = func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil || !tripwire.DialAllowed(ap.Addr(), set) {
					return fmt.Errorf("dial %s: address not in the checked set", address)
				}
				return nil
			}
			var last error
			for _, a := range set {
				c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
				if err == nil {
					return c, nil
				}
				last = err
			}
			return nil, last
		},
	}
	defer transport.CloseIdleConnections()
	var blocked error
	client := &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			hop := len(via)
			if hop > tw.Config().MaxRedirects {
				hv := verdict.Denial(verdict.CheckTripwire, verdict.URLRedirectBlocked, fmt.Sprintf("redirect hop %d: more than max_redirects (%d)", hop, tw.Config().MaxRedirects))
				hv.Phase = verdict.PhaseExecute
				verdicts = append(verdicts, hv)
				blocked = ErrRedirectBlocked
				return blocked
			}
			hopAddrs, hv := tw.CheckURL(req.Context(), req.URL.String(), hop)
			verdicts = append(verdicts, hv)
			if hv.Denied() {
				blocked = ErrRedirectBlocked
				return blocked
			}
			allowed.set(req.URL.String(), hopAddrs)
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, verdicts, fmt.Errorf("http_get %s: %w", rawURL, err)
	}
	req.Header.Set("User-Agent", "IronVise")
	resp, err := client.Do(req)
	if blocked != nil {
		return nil, verdicts, blocked
	}
	if err != nil {
		return nil, verdicts, fmt.Errorf("http_get: %w", err)
	}
	defer resp.Body.Close()
	body, err := collect(resp.Body)
	res := &HTTPResult{
		Status: resp.StatusCode, StatusText: http.StatusText(resp.StatusCode),
		ContentType: resp.Header.Get("Content-Type"), FinalURL: resp.Request.URL.String(), Body: body,
	}
	if err != nil {
		return res, verdicts, fmt.Errorf("http_get: reading body: %w", err)
	}
	return res, verdicts, nil
}

// Summary is the first line of the observation of an HTTP result.
func (r *HTTPResult) Summary() string {
	s := "[http " + strconv.Itoa(r.Status)
	if r.StatusText != "" {
		s += " " + r.StatusText
	}
	if r.ContentType != "" {
		s += "; " + r.ContentType
	}
	return s + "]"
}

// addrSet maps a host to the addresses the tripwire approved for it.
type addrSet struct {
	mu sync.Mutex
	m  map[string][]netip.Addr // guarded by mu
}

func (s *addrSet) set(rawURL string, addrs []netip.Addr) {
	host := hostOf(rawURL)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[host] = addrs
}

func (s *addrSet) get(host string) []netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[host]
}
