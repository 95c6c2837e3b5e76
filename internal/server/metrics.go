package server

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/ironvise/ironvise/internal/ledger"
)

// metrics are the Prometheus collectors of one server
// (docs/design/api.md#metrics and the metric-name list). Labels never carry
// session ids, tokens or free text.
type metrics struct {
	reg *prometheus.Registry

	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
	rateLimited    *prometheus.CounterVec

	eventsAppended  prometheus.Counter
	sessionsCreated prometheus.Counter
	tripwireRejects prometheus.Counter
	tripwireDetects prometheus.Counter
	guardDenials    prometheus.Counter
	guardDetects    prometheus.Counter
	scannerDetects  prometheus.Counter
	checkpoints     prometheus.Counter
	llmTokens       prometheus.Counter

	verdicts       *prometheus.CounterVec
	intents        *prometheus.CounterVec
	denials        *prometheus.CounterVec
	sandboxResults *prometheus.CounterVec
	sandboxRuns    *prometheus.CounterVec
	sandboxSeconds *prometheus.HistogramVec
	egressConns    *prometheus.CounterVec
	appends        *prometheus.CounterVec
	appendSeconds  *prometheus.HistogramVec

	sseClients prometheus.Gauge
	sseDropped prometheus.Counter
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		m.reg.MustRegister(c)
		return c
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	histVec := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		m.reg.MustRegister(h)
		return h
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.requests = counterVec("ironvise_http_requests_total", "HTTP requests by route pattern and status code.", "route", "code")
	m.requestSeconds = histVec("ironvise_http_request_seconds", "HTTP request duration by route pattern (streams excluded).", prometheus.DefBuckets, "route")
	m.rateLimited = counterVec("ironvise_rate_limited_total", "Requests refused with 429 by limiter (global, session, sse).", "limiter")

	m.eventsAppended = counter("ectoledger_events_appended_total", "Ledger events committed by this process since it started.")
	m.sessionsCreated = counter("ectoledger_sessions_created_total", "Sessions created by this process since it started.")
	m.tripwireRejects = counter("ectoledger_tripwire_rejections_total", "Intents denied by the tripwire check.")
	m.tripwireDetects = counter("ectoledger_tripwire_detections_total", "Intents denied by the tripwire check (same value as ectoledger_tripwire_rejections_total).")
	m.guardDenials = counter("ectoledger_guard_denials_total", "Intents denied by the guard check.")
	m.guardDetects = counter("ectoledger_guard_detections_total", "Intents denied by the guard check (same value as ectoledger_guard_denials_total).")
	m.scannerDetects = counter("ectoledger_scanner_detections_total", "Observations the output scanner labelled and goals the prompt scan denied or flagged.")
	m.checkpoints = counter("ectoledger_snapshots_created_total", "Signed checkpoints created.")
	m.llmTokens = counter("ectoledger_token_count_total", "Approximate LLM tokens (characters / 4) sent and received.")

	m.verdicts = counterVec("ironvise_check_verdicts_total", "Check verdicts by check, decision and reason code.", "check", "decision", "code")
	m.intents = counterVec("ironvise_intents_total", "Intents by outcome: allow (committed), deny (a check denied), abort (the sandbox could not be applied).", "verdict")
	m.denials = counterVec("ironvise_denials_total", "Denials by check.", "check")
	m.sandboxResults = counterVec("ironvise_sandbox_results_total", "Sandbox results by tier and status.", "tier", "status")
	m.sandboxRuns = counterVec("ironvise_sandbox_runs_total", "Sandbox runs by tier and status.", "tier", "status")
	m.sandboxSeconds = histVec("ironvise_sandbox_seconds", "Wall-clock time of sandboxed commands by tier.", []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}, "tier")
	m.egressConns = counterVec("ironvise_egress_connections_total", "Connections of sandboxed commands through the egress proxy by verdict (allow, deny).", "verdict")
	m.appends = counterVec("ironvise_ledger_appends_total", "Events appended by this process by backend.", "backend")
	m.appendSeconds = histVec("ironvise_ledger_append_seconds", "Duration of the write transaction that committed each event, by backend.", []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}, "backend")

	m.sseClients = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ironvise_sse_clients", Help: "Open event streams."})
	m.reg.MustRegister(m.sseClients)
	m.sseDropped = counter("ironvise_sse_dropped_total", "Event streams dropped because the client fell behind.")

	gaugeFunc := func(name, help string, f func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	counterFunc := func(name, help string, f func() float64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
	}
	gaugeFunc("ironvise_log_tree_size", "Events in the instance-wide Merkle log.", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := s.ledger().LogSize(ctx)
		if err != nil {
			return 0
		}
		return float64(n)
	})
	m.reg.MustRegister(&sessionGauge{s: s, desc: prometheus.NewDesc("ironvise_sessions", "Sessions in the ledger by status.", []string{"status"}, nil)})
	gaugeFunc("ironvise_webhook_queue_depth", "Webhook deliveries waiting in the queue.", func() float64 { return float64(s.webhookStats().QueueDepth) })
	counterFunc("ironvise_webhook_dropped_total", "Webhook deliveries dropped because the queue was full.", func() float64 { return float64(s.webhookStats().Dropped) })
	counterFunc("ironvise_webhook_failures_total", "Webhook deliveries that failed after their retries.", func() float64 { return float64(s.webhookStats().Failed) })
	gaugeFunc("ironvise_connections_open", "Open client connections, event streams included (ECTO_MAX_CONNECTIONS caps them).", func() float64 { return float64(s.conns.open()) })
	counterFunc("ironvise_connections_refused_global_total", "Connections refused with 503 because the server had ECTO_MAX_CONNECTIONS open.", func() float64 { return float64(s.conns.rejectedGlobal.Load()) })
	counterFunc("ironvise_connections_refused_per_ip_total", "Connections refused with 429 because their address had ECTO_MAX_CONNECTIONS_PER_IP open.", func() float64 { return float64(s.conns.rejectedIP.Load()) })
	m.reg.MustRegister(&webhookDeliveries{s: s, desc: prometheus.NewDesc("ironvise_webhook_deliveries_total", "Webhook delivery attempts by result.", []string{"result"}, nil)})
	return m
}

// sessionGauge reads the session counts from the ledger at scrape time, so
// they survive restarts and include every instance.
type sessionGauge struct {
	s    *Server
	desc *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (g *sessionGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *sessionGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := g.s.ledger().Stats(ctx)
	for _, status := range []ledger.Status{ledger.StatusRunning, ledger.StatusCompleted, ledger.StatusFailed, ledger.StatusAborted} {
		v := 0.0
		if err == nil {
			v = float64(st.Sessions[status])
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, string(status))
	}
}

// webhookDeliveries exposes the dispatcher's delivery counters.
type webhookDeliveries struct {
	s    *Server
	desc *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (w *webhookDeliveries) Describe(ch chan<- *prometheus.Desc) { ch <- w.desc }

// Collect implements prometheus.Collector.
func (w *webhookDeliveries) Collect(ch chan<- prometheus.Metric) {
	st := w.s.webhookStats()
	ch <- prometheus.MustNewConstMetric(w.desc, prometheus.CounterValue, float64(st.Delivered), "ok")
	ch <- prometheus.MustNewConstMetric(w.desc, prometheus.CounterValue, float64(st.Failed), "failed")
	ch <- prometheus.MustNewConstMetric(w.desc, prometheus.CounterValue, float64(st.Dropped), "dropped")
}

// eventFacts are the payload fields the metrics read.
type eventFacts struct {
	Check      string  `json:"check"`
	Decision   string  `json:"decision"`
	Code       string  `json:"code"`
	Phase      string  `json:"phase"`
	Tier       string  `json:"tier"`
	Status     string  `json:"status"`
	DurationMS float64 `json:"duration_ms"`
	Suspicious bool    `json:"suspicious"`
	IntentSeq  *uint64 `json:"intent_seq"`
	Verdict    string  `json:"verdict"`
}

// committed counts the events of one committed write transaction of this
// process.
func (m *metrics) committed(backend string, evs []ledger.Event, d time.Duration) {
	for i := range evs {
		e := &evs[i]
		m.eventsAppended.Inc()
		m.appends.WithLabelValues(backend).Inc()
		m.appendSeconds.WithLabelValues(backend).Observe(d.Seconds())
		switch e.Type {
		case ledger.TypeGenesis:
			if e.SessionID != uuid.Nil {
				m.sessionsCreated.Inc()
			}
			continue
		case ledger.TypeCheckpoint:
			m.checkpoints.Inc()
			continue
		case ledger.TypeCheckVerdict, ledger.TypeSandboxResult, ledger.TypeObservation, ledger.TypeAction, ledger.TypeEgress:
		default:
			continue
		}
		var f eventFacts
		if err := json.Unmarshal(e.Payload, &f); err != nil {
			continue
		}
		switch e.Type {
		case ledger.TypeCheckVerdict:
			m.verdicts.WithLabelValues(f.Check, f.Decision, f.Code).Inc()
			if f.Check == "prompt_scan" && (f.Decision == "deny" || f.Decision == "flag") {
				m.scannerDetects.Inc()
			}
			if f.Decision != "deny" {
				continue
			}
			m.denials.WithLabelValues(f.Check).Inc()
			if f.Check != "prompt_scan" && f.Phase != "execute" {
				m.intents.WithLabelValues("deny").Inc()
			}
			switch f.Check {
			case "tripwire":
				m.tripwireRejects.Inc()
				m.tripwireDetects.Inc()
			case "guard":
				m.guardDenials.Inc()
				m.guardDetects.Inc()
			}
		case ledger.TypeSandboxResult:
			m.sandboxResults.WithLabelValues(f.Tier, f.Status).Inc()
			m.sandboxRuns.WithLabelValues(f.Tier, f.Status).Inc()
			m.sandboxSeconds.WithLabelValues(f.Tier).Observe(f.DurationMS / 1000)
			if f.Status == "aborted" {
				m.intents.WithLabelValues("abort").Inc()
			}
		case ledger.TypeObservation:
			if f.Suspicious {
				m.scannerDetects.Inc()
			}
		case ledger.TypeEgress:
			// Only the two verdicts the proxy writes: the label set stays
			// bounded whatever a payload says.
			if f.Verdict == "allow" || f.Verdict == "deny" {
				m.egressConns.WithLabelValues(f.Verdict).Inc()
			}
		case ledger.TypeAction:
			if f.IntentSeq != nil {
				m.intents.WithLabelValues("allow").Inc()
			}
		}
	}
}

// handlePrometheus is route 32: the Prometheus text format, or the same
// text escaped in an HTML page when the client accepts text/html.
func (s *Server) handlePrometheus(rc *reqCtx) {
	mfs, err := s.metrics.reg.Gather()
	if err != nil {
		rc.fail(err)
		return
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			rc.fail(err)
			return
		}
	}
	h := rc.w.Header()
	h.Set("Cache-Control", "no-store")
	body := buf.Bytes()
	if strings.Contains(strings.ToLower(rc.r.Header.Get("Accept")), "text/html") {
		page := "<!doctype html><html><head><meta charset=\"utf-8\"><title>IronVise metrics</title></head><body><p><a href=\"/\">Back to the dashboard</a></p><pre>" +
			html.EscapeString(buf.String()) + "</pre></body></html>"
		body = []byte(page)
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	} else {
		h.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	}
	rc.w.WriteHeader(http.StatusOK)
	rc.status = http.StatusOK
	if rc.r.Method != http.MethodHead {
		rc.w.Write(body)
	}
}
