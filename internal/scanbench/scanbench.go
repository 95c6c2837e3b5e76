// Package scanbench holds what the benchmarks of the output scanner and the
// redactor share: the benign log text both are measured on, and the timing
// loop that reports a median per call. The two run one after the other on
// every observation and share one latency budget, so they are measured on
// the same text the same way. Only tests import it.
package scanbench

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenignLog is size bytes of log-like ASCII: syslog, access-log and JSON log
// lines of the kind a run_command observation carries. It deliberately
// contains hint words and keywords ("systemd", "api", "curl/8.5.0", "new",
// "data", "message") so that gating alone does not make it cheap.
func BenignLog(size int) string {
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

// P50 runs f b.N times and reports the median time per call: the latency
// targets are set on the median, which one slow call does not move. It
// also reports the median CPU time of the calling thread, which other load
// on a shared machine does not inflate.
func P50(b *testing.B, bytes int, f func()) {
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
