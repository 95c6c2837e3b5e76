package redact

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// benignLog is 32 KiB of log-like ASCII, the text of the output scanner's
// benchmark (internal/scan/bench_test.go): syslog, access-log and JSON log
// lines. It holds keywords ("api", "curl") so that gating alone does not
// make it cheap.
func benignLog(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "Nov 29 08:%02d:%02d web-01 systemd[1]: Started Session %d of user deploy.\n", i%60, (i*7)%60, i)
		case 1:
			fmt.Fprintf(&b, "10.0.%d.%d - - [29/Nov/2026:08:10:21 +0000] \"GET /api/v1/items/%d?page=%d HTTP/1.1\" 200 %d \"-\" \"curl/8.5.0\"\n", i%255, (i*3)%255, i, i%9, 512+i)
		case 2:
			fmt.Fprintf(&b, "{\"level\":\"info\",\"ts\":\"2026-11-29T08:10:21.%03dZ\",\"msg\":\"new connection\",\"remote\":\"10.1.2.%d:5%04d\",\"duration_ms\":%d}\n", i%1000, i%255, i%10000, i%97)
		case 3:
			fmt.Fprintf(&b, "2026-11-29 08:10:21,%03d WARN  [worker-%d] data sync lagging: %d records behind, message queue depth %d\n", i%1000, i%8, i*13%5000, i%300)
		default:
			fmt.Fprintf(&b, "kernel: [%d.%06d] eth0: link up, 1000 Mbps, full duplex, request_id=3f2a9c4e-1b2d-4c5e-8f90-%012d\n", 1000+i, i*37%1000000, i)
		}
	}
	return b.String()[:size]
}

// sourceCode is 32 KiB of Go-like source full of the words the generic
// rules key on (key, token, auth, api, secret, password).
func sourceCode(size int) string {
	lines := []string{
		"func (r *Redactor) Token(key string) (string, error) {",
		"\tauth, err := r.client.Auth(ctx, key) // the api call",
		"\tif err != nil { return \"\", fmt.Errorf(\"auth %s: %w\", key, err) }",
		"\tsecret := auth.Secret()",
		"\tpassword := os.Getenv(\"DB_PASSWORD\")",
		"\tcfg := Config{APIKey: cfg.APIKey, Token: token, Timeout: 30 * time.Second}",
		"\treturn hex.EncodeToString(sum[:]), nil",
		"}",
	}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
	}
	return b.String()[:size]
}

// benchP50 runs f b.N times and reports the median time per call, and the
// median CPU time of the calling thread, which other load on a shared
// machine does not inflate.
func benchP50(b *testing.B, bytes int, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	durs := make([]time.Duration, 0, 4096)
	cpus := make([]int64, 0, 4096)
	for b.Loop() {
		start := time.Now()
		c0, ok := threadCPU()
		f()
		if c1, _ := threadCPU(); ok {
			cpus = append(cpus, c1-c0)
		}
		durs = append(durs, time.Since(start))
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds())/1e3, "p50-µs")
	if len(cpus) > 0 {
		slices.Sort(cpus)
		b.ReportMetric(float64(cpus[len(cpus)/2])/1e3, "p50-cpu-µs")
	}
}

// BenchmarkRedact32KiB: redaction runs on every observation before the
// scanner, inside the scanner's budget
// (docs/design/checks.md#scanner-pipeline: a 32 KiB benign observation in <
// 200 µs p50 at GOMAXPROCS=1, both together).
func BenchmarkRedact32KiB(b *testing.B) {
	r := ForSession("3f2a9c4e-1b2d-4c5e-8f90-000000000001")
	for _, tc := range []struct{ name, text string }{
		{"log", benignLog(32 << 10)},
		{"source", sourceCode(32 << 10)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if fs := r.Find(tc.text); len(fs) != 0 {
				b.Fatalf("benign text has findings %v", fs)
			}
			benchP50(b, len(tc.text), func() { r.Find(tc.text) })
		})
	}
}
