package action

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// loopbackResolver maps every allowed test host to the local test server.
// It is an interface fake: tests cannot depend on DNS.
type loopbackResolver map[string]string

func (r loopbackResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ip, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(ip)}, nil
	}
	return nil, fmt.Errorf("lookup %s: no such host", host)
}

func newTW(t *testing.T, ws string, extra string) *tripwire.Tripwire {
	t.Helper()
	cfg, err := tripwire.LoadConfigBytes([]byte(`{"allowed_domains":["example.com","github.com"],"allowed_ip_ranges":["127.0.0.0/8"]`+extra+`}`), tripwire.LoadOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	return tripwire.New(cfg, tripwire.Options{Workspace: ws, Resolver: loopbackResolver{"example.com": "127.0.0.1", "api.github.com": "127.0.0.1", "internal.example.com": "10.0.0.7"}})
}

func tempWS(t *testing.T) string {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestHTTPGet(t *testing.T) {
	mux := http.NewServeMux()
	var srvURL string
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "body for "+r.Host)
	})
	mux.HandleFunc("/to-evil", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://evil.io/x", http.StatusFound)
	})
	mux.HandleFunc("/to-http", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.com/ok", http.StatusFound)
	})
	mux.HandleFunc("/to-internal", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(srvURL, "example.com", "internal.example.com", 1)+"/ok", http.StatusFound)
	})
	mux.HandleFunc("/to-github", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(srvURL, "example.com", "api.github.com", 1)+"/ok", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, MaxCollect+1000))
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	srvURL = fmt.Sprintf("https://example.com:%d", port)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	// The test certificate names example.com; api.github.com is accepted by
	// pinning the server name in tests only.
	h := &HTTP{Tripwire: newTW(t, tempWS(t), ""), TLS: &tls.Config{RootCAs: pool, ServerName: "example.com"}}
	ctx := context.Background()

	res, vs, err := h.Get(ctx, srvURL+"/ok", nil)
	if err != nil || res.Status != 200 || !strings.HasPrefix(string(res.Body.Data), "body for example.com") || len(vs) != 1 || vs[0].Decision != verdict.Allow {
		t.Fatalf("ok: %+v %v %v", res, vs, err)
	}
	if res.Summary() != "[http 200 OK; text/plain]" {
		t.Fatalf("summary %q", res.Summary())
	}
	for _, tc := range []struct{ path, inner string }{
		{"/to-evil", "url_domain_not_allowed"},
		{"/to-http", "url_scheme"},
		{"/to-internal", "url_resolved_ip_blocked"},
		{"/loop", "max_redirects"},
	} {
		res, vs, err = h.Get(ctx, srvURL+tc.path, nil)
		last := vs[len(vs)-1]
		if !errors.Is(err, ErrRedirectBlocked) || res != nil || last.Code != verdict.URLRedirectBlocked || last.Phase != verdict.PhaseExecute || !strings.Contains(last.Message, tc.inner) {
			t.Fatalf("%s: res %+v err %v verdicts %+v", tc.path, res, err, vs)
		}
	}
	res, vs, err = h.Get(ctx, srvURL+"/to-github", nil)
	if err != nil || res.Status != 200 || len(vs) != 2 || !strings.Contains(res.FinalURL, "api.github.com") {
		t.Fatalf("allowed redirect: %+v %v %v", res, vs, err)
	}
	res, _, err = h.Get(ctx, srvURL+"/huge", nil)
	if err != nil || len(res.Body.Data) != MaxCollect || res.Body.Total != MaxCollect+1000 {
		t.Fatalf("huge: %v %d %d", err, len(res.Body.Data), res.Body.Total)
	}
	_, vs, err = h.Get(ctx, "https://evil.io/", nil)
	if err != nil || len(vs) != 1 || vs[0].Code != verdict.URLDomainNotAllowed {
		t.Fatalf("denied at the first request: %v %+v", err, vs)
	}

	// With the check-time address set, nothing is resolved again: a
	// tripwire that cannot resolve example.com any more still reaches the
	// checked address, and a checked address that is not the server is all
	// that is ever dialled.
	cfg := h.Tripwire.Config()
	blind := &HTTP{Tripwire: tripwire.New(cfg, tripwire.Options{Workspace: cfg.AllowedRoots[0], Resolver: loopbackResolver{}}), TLS: h.TLS}
	res, vs, err = blind.Get(ctx, srvURL+"/ok", []netip.Addr{netip.MustParseAddr("127.0.0.1")})
	if err != nil || res.Status != 200 || len(vs) != 0 {
		t.Fatalf("checked addresses: %+v %v %v", res, vs, err)
	}
	if _, _, err = blind.Get(ctx, srvURL+"/ok", []netip.Addr{netip.MustParseAddr("127.0.0.2")}); err == nil {
		t.Fatal("a request reached the server although it is not at the checked address")
	}
}
