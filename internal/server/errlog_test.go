package server

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestErrLogRateLimited: a storm of one failure (an outage's 60,000
// requests) writes one line per route, kind and window, each counting the
// failures it stands for; the count of the last window is flushed.
func TestErrLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	l := newErrLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	err := errors.New("conn closed")
	for i := 0; i < 60000; i++ {
		// 11 s of failures, 5,454 a second.
		now = time.Unix(1000, 0).Add(time.Duration(i) * 11 * time.Second / 60000)
		l.failed("/api/sessions/{id}/events", ledger.FailureUnavailable, "r", err)
	}
	l.failed("/api/sessions", ledger.FailureUnavailable, "r", err)
	now = now.Add(errLogWindow)
	l.flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d log lines for 60,001 failures; want 4 (two windows of one route, one of another, one flush):\n%s", len(lines), buf.String())
	}
	total := 0
	for _, ln := range lines {
		for _, f := range strings.Fields(ln) {
			for _, key := range []string{"similar_failures_not_logged=", "count="} {
				if v, ok := strings.CutPrefix(f, key); ok {
					var n int
					for _, c := range v {
						n = n*10 + int(c-'0')
					}
					total += n
				}
			}
		}
	}
	if total+3 != 60001 {
		t.Fatalf("the lines account for %d failures; want 60,001:\n%s", total+3, buf.String())
	}
}
