package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// securityWindow is the rolling window of SecurityMetrics
// (docs/design/api.md#metrics).
const securityWindow = 7 * 24 * time.Hour

// secLayers are the layers of injection_attempts_by_layer.
var secLayers = []string{"tripwire", "guard_llm", "policy", "schema", "scanner"}

// secWindow counts deny verdicts, scanner detections and circuit-breaker
// aborts per hour over the last seven days, from the ledger of every
// instance: the feed hands it each new event, and a backfill at startup
// reads the week before.
type secWindow struct {
	mu      sync.Mutex
	buckets map[int64]*secBucket // guarded by mu: by Unix hour
}

type secBucket struct {
	layers  map[string]int64
	breaker int64
}

func newSecWindow() *secWindow { return &secWindow{buckets: map[int64]*secBucket{}} }

func (w *secWindow) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buckets = map[int64]*secBucket{}
}

// observe counts one event.
func (w *secWindow) observe(e *ledger.Event) {
	var layer string
	breaker := false
	switch e.Type {
	case ledger.TypeCheckVerdict:
		var v struct{ Check, Decision string }
		if json.Unmarshal(e.Payload, &v) != nil || v.Decision != "deny" {
			return
		}
		switch v.Check {
		case "tripwire", "policy", "schema":
			layer = v.Check
		case "guard":
			layer = "guard_llm"
		case "prompt_scan":
			layer = "scanner"
		default:
			return
		}
	case ledger.TypeObservation:
		var v struct{ Suspicious bool }
		if json.Unmarshal(e.Payload, &v) != nil || !v.Suspicious {
			return
		}
		layer = "scanner"
	case ledger.TypeCircuitBreaker:
		breaker = true
	default:
		return
	}
	hour := e.CreatedMicros / 1e6 / 3600
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buckets[hour]
	if b == nil {
		b = &secBucket{layers: map[string]int64{}}
		w.buckets[hour] = b
	}
	if breaker {
		b.breaker++
	} else {
		b.layers[layer]++
	}
}

// totals sums the window ending now and drops older buckets.
func (w *secWindow) totals(now time.Time) (map[string]int64, int64) {
	oldest := now.Add(-securityWindow).Unix() / 3600
	out := map[string]int64{}
	for _, l := range secLayers {
		out[l] = 0
	}
	var breaker int64
	w.mu.Lock()
	defer w.mu.Unlock()
	for h, b := range w.buckets {
		if h < oldest {
			delete(w.buckets, h)
			continue
		}
		for l, n := range b.layers {
			out[l] += n
		}
		breaker += b.breaker
	}
	return out, breaker
}

// backfill reads the week of events before the feed started: it finds the
// first event of the window by binary search over the log (log order is
// commit order, so times only grow), then counts forward.
func (w *secWindow) backfill(ctx context.Context, s *Server, end int64) {
	l := s.ledger()
	since := time.Now().Add(-securityWindow).UnixMicro()
	lo, hi := int64(0), end
	for lo < hi {
		mid := (lo + hi) / 2
		evs, err := l.EventsByLog(ctx, mid, 1)
		if err != nil || len(evs) == 0 {
			return
		}
		if evs[0].CreatedMicros < since {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for from := lo; from < end; {
		evs, err := l.EventsByLog(ctx, from, feedPage)
		if err != nil || len(evs) == 0 {
			return
		}
		for i := range evs {
			if evs[i].LogIndex >= end {
				return
			}
			w.observe(&evs[i])
		}
		from = evs[len(evs)-1].LogIndex + 1
	}
}

// handleMetrics is route 30: counts from the ledger, so they survive
// restarts.
func (s *Server) handleMetrics(rc *reqCtx) {
	st, err := s.ledger().Stats(rc.r.Context())
	if err != nil {
		rc.fail(err)
		return
	}
	by := map[string]int64{}
	for _, k := range []ledger.Status{ledger.StatusRunning, ledger.StatusCompleted, ledger.StatusFailed, ledger.StatusAborted} {
		by[string(k)] = st.Sessions[k]
	}
	rc.writeJSON(http.StatusOK, map[string]any{
		"total_sessions": st.TotalSessions, "total_events": st.TotalEvents, "sessions_by_status": by,
		"extra": map[string]any{"uptime_seconds": int64(time.Since(s.start).Seconds()), "sse_clients": s.openStreams()},
	})
}

// handleSecurityMetrics is route 31.
func (s *Server) handleSecurityMetrics(rc *reqCtx) {
	layers, breaker := s.sec.totals(time.Now())
	var total int64
	keys := make([]string, 0, len(layers))
	for k, n := range layers {
		total += n
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rc.writeJSON(http.StatusOK, map[string]any{
		"injection_attempts_detected_7d": total, "injection_attempts_by_layer": layers,
		"sessions_aborted_circuit_breaker": breaker, "chain_verification_failures": s.verifyFailures.Load(),
	})
}
