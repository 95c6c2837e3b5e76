//go:build linux

package cli

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/config"
)

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeCommand runs `ironvise serve` in-process: it prints the one-run
// token and the address, answers, and exits 0 when its context ends.
func TestServeCommand(t *testing.T) {
	env := map[string]string{
		"ECTO_DATA_DIR": t.TempDir(), "LLM_BACKEND": "mock", "GUARD_REQUIRED": "false", "ECTO_BIND_PORT": "0",
		"DATABASE_URL": "sqlite::memory:", "ECTO_SANDBOX_PERMISSIVE": "true",
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"ironvise", "serve", "--workspace", t.TempDir()}, strings.NewReader(""), &stdout, &stderr, config.MapLookup(env))
	}()
	re := regexp.MustCompile(`listening on (http://\S+)`)
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %s", stderr.String())
		}
	}
	tok := regexp.MustCompile(`one-run admin token: ([0-9a-f]{64})`).FindStringSubmatch(stdout.String())
	if tok == nil {
		t.Fatalf("stdout %q", stdout.String())
	}
	req, _ := http.NewRequest("GET", url+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+tok[1])
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /api/sessions: %v %v", res, err)
	}
	res.Body.Close()
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d: %s", c, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeRefusesBadLimits: a rate limit that is not a positive integer
// stops serve before it listens, naming the variable.
func TestServeRefusesBadLimits(t *testing.T) {
	env := map[string]string{"ECTO_DATA_DIR": t.TempDir(), "LLM_BACKEND": "mock", "GUARD_REQUIRED": "false", "SSE_KEEPALIVE_SECS": "0"}
	var stdout, stderr lockedBuffer
	c := run(context.Background(), []string{"ironvise", "serve"}, strings.NewReader(""), &stdout, &stderr, config.MapLookup(env))
	if c != ExitUsage || !strings.Contains(stderr.String(), "SSE_KEEPALIVE_SECS") || strings.Contains(stderr.String(), "listening") {
		t.Errorf("exit %d: %s", c, stderr.String())
	}
}
