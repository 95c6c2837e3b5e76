//go:build linux

package native

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// Overhead target (docs/design/sandbox.md#linux-native-tier, the issue):
// /bin/true through the native tier within 2 ms (median, 2 cores) of a bare
// fork/exec of /bin/true. Each benchmark reports its median as "median-µs";
// compare BenchmarkNativeTrue with BenchmarkBareTrue from the same run.
//
//	go test -run '^$' -bench 'True' -benchtime 300x ./internal/sandbox/native/
//
// IRONVISE_LAUNCHER_BIN=/path/to/ironvise makes BenchmarkNativeTrue use a
// built ironvise binary as the launcher instead of this test binary.

func reportMedian(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(d[len(d)*9/10].Microseconds()), "p90-µs")
	b.ReportMetric(float64(d[len(d)-1].Microseconds()), "max-µs")
}

func BenchmarkBareTrue(b *testing.B) {
	d := make([]time.Duration, 0, b.N)
	for b.Loop() {
		s := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(s))
	}
	reportMedian(b, d)
}

// BenchmarkBareShTrue is the unconfined cost of the /bin/sh -c the tier
// runs a command with in shell mode: the part of the overhead that comes from
// the shell, not from the confinement (argv mode skips it for a command
// that needs no shell).
func BenchmarkBareShTrue(b *testing.B) {
	d := make([]time.Duration, 0, b.N)
	for b.Loop() {
		s := time.Now()
		if err := exec.Command("/bin/sh", "-c", "/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(s))
	}
	reportMedian(b, d)
}

// BenchmarkNativeTrue runs /bin/true through the tier in argv mode (the
// launcher execs it directly) and under /bin/sh -c, each with a ready
// launcher (spare: what a command costs once the tier has one, the wait
// for it untimed) and with a launcher started for the command (fresh: the
// tier closed, as a Run finds it when commands come faster than
// launchers start).
func BenchmarkNativeTrue(b *testing.B) {
	for _, mode := range []string{sandbox.ExecArgv, sandbox.ExecShell} {
		for _, start := range []string{"spare", "fresh"} {
			b.Run(mode+"/"+start, func(b *testing.B) { benchNative(b, mode, start == "spare") })
		}
	}
}

func benchNative(b *testing.B, mode string, spare bool) {
	tier := newTestTier(b, sandbox.Options{})
	tier.shellOnly = mode == sandbox.ExecShell
	if bin := os.Getenv("IRONVISE_LAUNCHER_BIN"); bin != "" {
		tier.executable = bin
	}
	if !spare {
		tier.Close()
	}
	ws := b.TempDir()
	ctx := context.Background()
	d := make([]time.Duration, 0, b.N)
	for b.Loop() {
		if spare {
			waitReady(b, tier)
		}
		s := time.Now()
		r := tier.Run(ctx, sandbox.Request{Command: "/bin/true", Workspace: ws})
		if r.Status != sandbox.StatusOK || r.ExitCode == nil || *r.ExitCode != 0 || r.ExecMode != mode {
			b.Fatalf("run (%s): %s", r.ExecMode, r.Observation())
		}
		d = append(d, time.Since(s))
	}
	reportMedian(b, d)
}

func BenchmarkBwrapTrue(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bubblewrap is not installed")
	}
	d := make([]time.Duration, 0, b.N)
	for b.Loop() {
		s := time.Now()
		if out, err := exec.Command(bwrap, "--ro-bind", "/", "/", "--unshare-all", "/bin/true").CombinedOutput(); err != nil {
			b.Fatalf("bwrap: %v %s", err, out)
		}
		d = append(d, time.Since(s))
	}
	reportMedian(b, d)
}

// BenchmarkNamespacesTrue and BenchmarkNamespacesNetTrue isolate the cost
// of the command's own network namespace: /bin/true started in fresh PID
// and mount namespaces, without and with CLONE_NEWNET (root only).
func BenchmarkNamespacesTrue(b *testing.B) {
	benchClone(b, unix.CLONE_NEWPID|unix.CLONE_NEWNS)
}

func BenchmarkNamespacesNetTrue(b *testing.B) {
	benchClone(b, unix.CLONE_NEWPID|unix.CLONE_NEWNS|unix.CLONE_NEWNET)
}

func benchClone(b *testing.B, flags uintptr) {
	if os.Geteuid() != 0 {
		b.Skip("creating namespaces without a user namespace needs root")
	}
	d := make([]time.Duration, 0, b.N)
	for b.Loop() {
		s := time.Now()
		c := exec.Command("/bin/true")
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(s))
	}
	reportMedian(b, d)
}

// BenchmarkProxyModeTrue runs /bin/true in argv mode with a ready
// launcher, in mode none and in proxy mode: the difference is what proxy
// mode adds to a command's start (the listener, its hand-over and the
// proxy's start and stop).
func BenchmarkProxyModeTrue(b *testing.B) {
	for _, proxy := range []bool{false, true} {
		name := "none"
		if proxy {
			name = "proxy"
		}
		b.Run(name, func(b *testing.B) {
			tier := newTestTier(b, sandbox.Options{})
			ws := b.TempDir()
			req := sandbox.Request{Command: "/bin/true", Workspace: ws}
			if proxy {
				req.Egress = egress.NewRules(nil, nil)
			}
			d := make([]time.Duration, 0, b.N)
			for b.Loop() {
				waitReady(b, tier)
				s := time.Now()
				r := tier.Run(context.Background(), req)
				if r.Status != sandbox.StatusOK || r.ExitCode == nil || *r.ExitCode != 0 {
					b.Fatalf("run: %s", r.Observation())
				}
				d = append(d, time.Since(s))
			}
			reportMedian(b, d)
		})
	}
}
