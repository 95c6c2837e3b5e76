//go:build linux

package container

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// BenchmarkContainerVsPlainPodman measures `sh -c true` through the tier and
// through a plain `podman run --rm IMAGE sh -c true` of the same image,
// alternating them in every iteration so that a change in machine load hits
// all alike. Target (issue 6): the tier within 10% of the plain run. A plain
// run sets up a network, which the tier never does, so the benchmark also
// times `podman run --rm --network=none`: the tier's own cost (limits,
// mounts, preflight cache) is the difference to that one. It reports the
// medians (tier-ms, plain-ms, nonet-ms) and the tier's overhead over each
// (overhead-%, overhead-nonet-%).
//
//	go test -run XXX -bench ContainerVsPlain -benchtime 40x ./internal/sandbox/container/
func BenchmarkContainerVsPlainPodman(b *testing.B) {
	tier := newPodman(b)
	ws := workspace(b)
	ctx := context.Background()
	// Warm up both paths (preflight, image layers in the page cache).
	if r := tier.Run(ctx, sandbox.Request{Command: "true", Workspace: ws}); r.Status != sandbox.StatusOK {
		b.Fatalf("tier: %s", r.Headline())
	}
	podman := func(args ...string) {
		args = append(append([]string{"run", "--rm"}, args...), tier.image, "sh", "-c", "true")
		if out, err := exec.Command("podman", args...).CombinedOutput(); err != nil {
			b.Fatalf("podman %q: %v %s", args, err, out)
		}
	}
	podman()
	podman("--network=none")
	var tierTimes, plainTimes, nonetTimes []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if r := tier.Run(ctx, sandbox.Request{Command: "true", Workspace: ws}); r.Status != sandbox.StatusOK || *r.ExitCode != 0 {
			b.Fatalf("tier: %s", r.Headline())
		}
		tierTimes = append(tierTimes, time.Since(start))
		start = time.Now()
		podman()
		plainTimes = append(plainTimes, time.Since(start))
		start = time.Now()
		podman("--network=none")
		nonetTimes = append(nonetTimes, time.Since(start))
	}
	b.StopTimer()
	mt, mp, mn := median(tierTimes), median(plainTimes), median(nonetTimes)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(mt), "tier-ms")
	b.ReportMetric(ms(mp), "plain-ms")
	b.ReportMetric(ms(mn), "nonet-ms")
	b.ReportMetric(100*(float64(mt)-float64(mp))/float64(mp), "overhead-%")
	b.ReportMetric(100*(float64(mt)-float64(mn))/float64(mn), "overhead-nonet-%")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkProxyModeOverhead measures what proxy mode adds to a run: `sh -c
// true` in mode none and in proxy mode (the namespace, the listener, the
// proxy's goroutine and its stop), alternating in every iteration. It
// reports the medians (none-ms, proxy-ms) and their difference
// (proxy-extra-ms). The cost of each connection through the proxy is
// internal/egress's benchmark.
//
//	go test -run XXX -bench ProxyModeOverhead -benchtime 20x ./internal/sandbox/container/
func BenchmarkProxyModeOverhead(b *testing.B) {
	tier := newPodman(b)
	ws := workspace(b)
	ctx := context.Background()
	rules := egress.NewRules([]string{"example.com"}, nil)
	runOnce := func(r *egress.Rules) time.Duration {
		start := time.Now()
		if res := tier.Run(ctx, sandbox.Request{Command: "true", Workspace: ws, Egress: r}); res.Status != sandbox.StatusOK || *res.ExitCode != 0 {
			b.Fatalf("run: %s", res.Headline())
		}
		return time.Since(start)
	}
	runOnce(nil)
	runOnce(rules)
	var none, proxy []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		none = append(none, runOnce(nil))
		proxy = append(proxy, runOnce(rules))
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	mn, mp := median(none), median(proxy)
	b.ReportMetric(ms(mn), "none-ms")
	b.ReportMetric(ms(mp), "proxy-ms")
	b.ReportMetric(ms(mp-mn), "proxy-extra-ms")
}
