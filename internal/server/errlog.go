package server

import (
	"log/slog"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// errLogWindow is how often one kind of failure of one route is logged
// in full; the repeats in between are counted and reported with the next
// line (issue 13, item 5: an 11 s PostgreSQL outage wrote 60,000 lines,
// 17.8 MB, one per failed request).
const errLogWindow = 10 * time.Second

// errLogger logs failed requests, at most one line per route and failure
// kind per errLogWindow, each with the number of failures it stands for.
type errLogger struct {
	log *slog.Logger
	now func() time.Time

	mu sync.Mutex
	m  map[errKey]*errEntry // guarded by mu
}

type errKey struct {
	route string
	kind  ledger.FailureKind
}

type errEntry struct {
	logged     time.Time // when the last line was written
	suppressed int       // failures since then not logged
}

func newErrLogger(log *slog.Logger) *errLogger {
	return &errLogger{log: log, now: time.Now, m: map[errKey]*errEntry{}}
}

// failed records one failed request: a line when none was written for its
// kind and route in the window, else a count.
func (l *errLogger) failed(route string, kind ledger.FailureKind, reqID string, err error) {
	now := l.now()
	k := errKey{route, kind}
	l.mu.Lock()
	e := l.m[k]
	if e == nil {
		if len(l.m) > 1000 {
			clear(l.m)
		}
		e = &errEntry{}
		l.m[k] = e
	}
	if !e.logged.IsZero() && now.Sub(e.logged) < errLogWindow {
		e.suppressed++
		l.mu.Unlock()
		return
	}
	n := e.suppressed
	e.logged, e.suppressed = now, 0
	l.mu.Unlock()
	args := []any{"request_id", reqID, "route", route, "err", err}
	if n > 0 {
		args = append(args, "similar_failures_not_logged", n, "window", errLogWindow)
	}
	l.log.Error("request failed", args...)
}

// flush reports the failures counted but not logged whose window has
// ended (the outage may be over, and no later failure would report them).
func (l *errLogger) flush() {
	now := l.now()
	l.mu.Lock()
	type pending struct {
		k errKey
		n int
	}
	var out []pending
	for k, e := range l.m {
		if e.suppressed > 0 && now.Sub(e.logged) >= errLogWindow {
			out = append(out, pending{k, e.suppressed})
			e.logged, e.suppressed = now, 0
		}
	}
	l.mu.Unlock()
	for _, p := range out {
		l.log.Error("requests failed", "route", p.k.route, "kind", kindName(p.k.kind), "count", p.n, "window", errLogWindow)
	}
}

func kindName(k ledger.FailureKind) string {
	switch k {
	case ledger.FailureUnavailable:
		return "database unavailable"
	case ledger.FailureStorageFull:
		return "storage full"
	}
	return "internal"
}
