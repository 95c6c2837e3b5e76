package tripwire_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/verdict"
)

// staticResolver maps test names to addresses. It is an interface fake
// because the tests must not depend on DNS; the proxy only asks it for
// names that passed the list.
type staticResolver map[string]netip.Addr

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, fmt.Errorf("lookup %s: no such host", host)
}

// TestTripwireAndProxyGiveTheSameReason runs real clients (curl, wget,
// git) through the real egress proxy on a loopback socket and compares
// each refusal the proxy records with the tripwire's verdict on the same
// command line: same decision, same code, same message. An allowed host
// passes both and is reached.
func TestTripwireAndProxyGiveTheSameReason(t *testing.T) {
	for _, p := range []string{"curl", "wget", "git"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed: %v", p, err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "reached") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	// allowed.test is the test server on loopback, opted in by its
	// address as ECTO_SANDBOX_EGRESS_ALLOW_CIDRS would.
	r := egressRules(t, "allowed.test", "127.0.0.1/32")
	tw := newTripwire(t, r)
	var mu sync.Mutex
	var records []egress.Record
	p, err := egress.New(egress.Config{Rules: r, Resolver: staticResolver{"allowed.test": netip.MustParseAddr("127.0.0.1")},
		OnConnection: func(rec egress.Record) { mu.Lock(); records = append(records, rec); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln, egress.NewBudget(egress.DefaultLimits())) }()
	defer func() { cancel(); <-done }()
	proxyURL := "http://" + ln.Addr().String()
	env := append(os.Environ(), "HOME="+t.TempDir(), "GIT_TERMINAL_PROMPT=0", "NO_PROXY=", "no_proxy=")
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		env = append(env, k+"="+proxyURL)
	}

	for _, cmd := range []string{
		"curl -fsS --max-time 20 https://evil.test/",
		"curl -fsS --max-time 20 http://evil.test/",
		"curl -fsS --max-time 20 https://allowed.test@evil.test/",
		"curl -fsS --max-time 20 https://EVIL.TEST./",
		"curl -fsS --max-time 20 https://allowed.test.evil.test/",
		"curl -fsS --max-time 20 http://169.254.169.254/latest/meta-data/",
		"curl -fsS --max-time 20 'http://[::ffff:169.254.169.254]/'",
		"curl -fsS --max-time 20 'http://[64:ff9b::a9fe:a9fe]/'",
		"curl -fsS --max-time 20 http://2852039166/",
		"curl -fsS --max-time 20 http://0xa9.0xfe.0xa9.0xfe/",
		"curl -fsS --max-time 20 http://0251.0376.0251.0376/",
		"curl -fsS --max-time 20 http://0x7f.2/",
		"curl -fsS --max-time 20 http://10.9.9.9/",
		"wget -q -t 1 -T 20 -O /dev/null http://evil.test/x",
		"git ls-remote https://evil.test/r.git",
		"curl -fsS --max-time 20 http://allowed.test:" + port + "/",
	} {
		t.Run(cmd, func(t *testing.T) {
			mu.Lock()
			records = nil
			mu.Unlock()
			c := exec.Command("sh", "-c", cmd)
			c.Env = env
			out, runErr := c.CombinedOutput()
			var rec egress.Record
			deadline := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				n := len(records)
				if n > 0 {
					rec = records[0]
				}
				mu.Unlock()
				if n > 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if rec.Verdict == "" {
				t.Fatalf("the proxy saw no connection (exit %v): %s", runErr, out)
			}
			v := checkCommand(tw, cmd)
			if rec.Verdict == verdict.Allow {
				if v.Denied() || runErr != nil || !strings.Contains(string(out), "reached") {
					t.Fatalf("proxy allowed (%s); tripwire %s %s %q; client exit %v: %s", rec.Rule, v.Decision, v.Code, v.Message, runErr, out)
				}
				return
			}
			if runErr == nil {
				t.Errorf("the client succeeded through a refusal: %s", out)
			}
			if !v.Denied() || v.Code != rec.Code || v.Message != rec.Reason {
				t.Fatalf("proxy: %s %s %q\ntripwire: %s %s %q", rec.Verdict, rec.Code, rec.Reason, v.Decision, v.Code, v.Message)
			}
		})
	}
}
