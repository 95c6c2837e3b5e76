//go:build linux

package native

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestOrdinaryWork checks that the allowlist and the filesystem rules are
// wide enough for the tools an agent uses.
func TestOrdinaryWork(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{})
	cases := []struct {
		name  string
		tools []string
		setup func(t *testing.T, fx *fixture)
		cmd   string
		want  []string
	}{
		{name: "pipeline_and_redirection_to_scratch",
			cmd:  `ls /usr | sort | head -n 3 > "$TMPDIR/o" && wc -l < "$TMPDIR/o" && cat README | tr a-z A-Z | grep NEEDLE > ~/up && cat ~/up`,
			want: []string{"3\n", "LINE TWO NEEDLE"}},
		{name: "coreutils",
			cmd:  `id -u; uname -s; date +%Y >/dev/null && echo date-ok; sha256sum README | cut -c1-8; wc -c < README; basename "$PWD"; stat -c %s README; printf 'x\n' | tee "$TMPDIR/t" >/dev/null; cat "$TMPDIR/t"; seq 3 | paste -sd+ | bc 2>/dev/null || expr 1 + 2`,
			want: []string{"Linux", "date-ok", "\n36\nws\n36\nx\n"}},
		{name: "grep_find_awk_sed",
			cmd:  `grep -rn needle . | sort; find . -name '*.txt' -type f; awk '{s += $2} END {print "sum=" s}' src/main.txt; sed -n 2p README`,
			want: []string{"./README:2:line two needle", "./src/main.txt:3:needle 3", "./src/main.txt", "sum=6", "line two needle"}},
		{name: "sort_large_file",
			setup: func(t *testing.T, fx *fixture) {
				f, err := os.Create(filepath.Join(fx.ws, "big.txt"))
				if err != nil {
					t.Fatal(err)
				}
				w := bufio.NewWriter(f)
				for i := 0; i < 400000; i++ {
					fmt.Fprintf(w, "%08d line of a large file to sort %d\n", (i*7919)%400000, i)
				}
				w.Flush()
				f.Close()
				os.Chmod(f.Name(), 0o644)
			},
			cmd:  `sort big.txt > "$TMPDIR/sorted" && sort -c "$TMPDIR/sorted" && wc -l < "$TMPDIR/sorted" && head -n 1 "$TMPDIR/sorted" | cut -c1-8`,
			want: []string{"400000", "00000000"}},
		{name: "git_on_a_read_only_repository", tools: []string{"/usr/bin/git"},
			setup: func(t *testing.T, fx *fixture) {
				for _, args := range [][]string{
					{"init", "-q"}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "add", "."},
					{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "first commit"},
				} {
					c := exec.Command("git", args...)
					c.Dir = fx.ws
					if out, err := c.CombinedOutput(); err != nil {
						t.Fatalf("git %v: %v\n%s", args, err, out)
					}
				}
				writeFile(t, fx.ws, "untracked.txt", "u\n")
			},
			cmd:  `git log --oneline | cut -d' ' -f2-; git status --short; git show --stat HEAD | tail -n 1; git diff --stat; git rev-parse --is-inside-work-tree`,
			want: []string{"first commit", "?? untracked.txt", "true"}},
		{name: "python3", tools: []string{py3},
			cmd:  `python3 -c 'import json, hashlib, os; print(json.dumps({"s": sum(range(10)), "h": hashlib.sha256(b"x").hexdigest()[:6], "home": os.environ["HOME"] == os.environ["TMPDIR"]}))'`,
			want: []string{`{"s": 45, "h": "2d7116", "home": true}`}},
		{name: "perl_and_socketpair", tools: []string{"/usr/bin/perl", py3},
			cmd:  `perl -e 'print "perl-ok\n"'; python3 probe.py socketpair`,
			want: []string{"perl-ok", "OK ping"}},
		{name: "denied_syscalls_print_errors",
			tools: []string{py3},
			cmd:   `python3 -c 'import socket; socket.socket()' 2>&1 | tail -n 1; echo x > README 2>&1; ping -c 1 127.0.0.1 2>&1 | head -n 1; echo done`,
			want:  []string{"PermissionError: [Errno 1] Operation not permitted", "Read-only file system", "done"}},
		{name: "devices_and_proc",
			cmd:  `echo x > /dev/null && head -c 16 /dev/urandom | wc -c && head -c 4 /dev/zero | wc -c && ps -e -o pid,comm | head -n 2 && cat /proc/self/status | grep -c Seccomp && ls /dev/fd/ >/dev/null && echo stderr-ok > /dev/stderr`,
			want: []string{"16\n4\n", "PID", "stderr-ok"}},
		{name: "background_jobs_within_the_command",
			cmd:  `(sleep 0.2; echo bg-done) & wait; echo after`,
			want: []string{"bg-done\nafter"}},
		{name: "mkfifo_symlink_rename_in_scratch",
			cmd:  `cd "$TMPDIR" && mkdir -p a/b && echo x > a/f && mv a/f a/b/g && ln -s b/g a/l && cat a/l && mkfifo p && (echo fifo > p &) && cat p && chmod 600 a/b/g && rm -r a && echo cleaned`,
			want: []string{"x\nfifo\ncleaned"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, tool := range tc.tools {
				requireTool(t, tool)
			}
			fx := newFixture(t)
			if tc.setup != nil {
				tc.setup(t, fx)
			}
			r := run(t, tier, fx, tc.cmd)
			exitZero(t, r)
			for _, w := range tc.want {
				contains(t, r, w)
			}
		})
	}
}

func TestExitCodesSignalsAndTimeout(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{})
	fx := newFixture(t)

	r := run(t, tier, fx, "echo out; echo err >&2; exit 3")
	if r.ExitCode == nil || *r.ExitCode != 3 || r.Signal != "" || r.Status != sandbox.StatusOK {
		t.Fatalf("got %s %s; want exit 3", r.Status, r.Headline())
	}
	if got, want := r.Observation(), "[exit 3]\nout\n--- stderr ---\nerr\n"; got != want {
		t.Fatalf("observation %q; want %q", got, want)
	}
	if r.ProcessExitCode() != 3 {
		t.Fatalf("ProcessExitCode %d; want 3", r.ProcessExitCode())
	}

	r = run(t, tier, fx, "sh -c 'kill -TERM $$'; exit $?")
	if r.ExitCode == nil || *r.ExitCode != 143 {
		t.Fatalf("got %s; want exit 143 from the killed child", r.Headline())
	}

	start := time.Now()
	r = run(t, tier, fx, "echo before; sleep 30; echo after", func(q *sandbox.Request) { q.Timeout = time.Second })
	if r.Status != sandbox.StatusTimeout || r.Headline() != "[timeout after 1 s]" || r.Signal != "SIGKILL" || r.ExitCode != nil {
		t.Fatalf("got %s %s; want a timeout", r.Status, r.Headline())
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("the timeout took %v", time.Since(start))
	}
	if !strings.Contains(r.Stdout, "before") || strings.Contains(r.Stdout, "after") {
		t.Fatalf("stdout %q", r.Stdout)
	}
	if r.ProcessExitCode() != 137 {
		t.Fatalf("ProcessExitCode %d; want 137 (128 + SIGKILL)", r.ProcessExitCode())
	}
	if r.Reason == "" {
		t.Fatal("a timeout has no reason")
	}
}

func TestTimeoutKillsEveryDescendant(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{Timeout: time.Second})
	fx := newFixture(t)
	mark := fmt.Sprintf("400.%d", time.Now().UnixNano()%1e9)
	r := run(t, tier, fx, fmt.Sprintf("setsid sh -c 'sleep %s' & (setsid sleep %s &); sleep %s", mark, mark, mark))
	if r.Status != sandbox.StatusTimeout {
		t.Fatalf("got %s; want timeout", r.Headline())
	}
	if pids := survivors(mark); len(pids) > 0 {
		t.Fatalf("processes %v survived the timeout", pids)
	}
}

func TestOutputIsCapped(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{})
	fx := newFixture(t)
	// 5 MB on stdout: 1 MiB kept while running, 64 KiB in the result.
	r := run(t, tier, fx, `yes abcdefghi | head -c 5000000; printf 'é%.0s' $(seq 40000) >&2`)
	exitZero(t, r)
	if !r.StdoutTruncated || !strings.HasSuffix(r.Stdout, fmt.Sprintf("\n[truncated: %d bytes omitted]", 5000000-sandbox.StreamCap)) {
		t.Fatalf("stdout not capped: len %d, tail %q", len(r.Stdout), r.Stdout[max(0, len(r.Stdout)-60):])
	}
	// 80000 bytes of two-byte runes: cut at 65536 is a rune boundary; the
	// marker counts the rest.
	if !r.StderrTruncated || !strings.HasSuffix(r.Stderr, "\n[truncated: 14464 bytes omitted]") {
		t.Fatalf("stderr not capped: %q", r.Stderr[max(0, len(r.Stderr)-60):])
	}
}

func TestResultRecord(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{Limits: sandbox.Limits{CPUSecs: 7, MemMiB: 300, NoFile: 32}})
	fx := newFixture(t)
	r := run(t, tier, fx, "grep -E '^Max (cpu time|address space|open files)' /proc/self/limits")
	e := r.Enforced
	if *e.LandlockABI < 1 || len(e.SeccompProfileSHA256) != 64 || e.Capabilities != "none" || !*e.NoNewPrivs ||
		e.Network != "none" || *e.UID != os.Geteuid() {
		t.Fatalf("enforced %+v", e)
	}
	if e.RLimits.CPUSecs != 7 || e.RLimits.ASMiB != 300 || e.RLimits.NoFile != 32 || e.RLimits.NProc != sandbox.DefaultNProc {
		t.Fatalf("rlimits %+v", e.RLimits)
	}
	for _, want := range []string{"Max cpu time              7                    8", "Max open files            32                   32", "314572800"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("the kernel's limits differ from the record: want %q in\n%s", want, r.Stdout)
		}
	}
	scratchLeftNothing(t, tier, r)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"tier", "status", "reason", "exit_code", "signal", "duration_ms", "stdout", "stderr", "stdout_truncated", "stderr_truncated", "enforced", "exec_mode"} {
		if _, ok := m[k]; !ok {
			t.Errorf("sandbox_result lacks %q: %s", k, b)
		}
	}
	enf := m["enforced"].(map[string]any)
	for _, k := range []string{"landlock_abi", "seccomp_profile_sha256", "rlimits", "uid", "capabilities", "no_new_privs", "network", "scratch_dir"} {
		if _, ok := enf[k]; !ok {
			t.Errorf("enforced lacks %q", k)
		}
	}
	if m["reason"] != nil || m["signal"] != nil {
		t.Errorf("absent values must be null: %s", b)
	}
}

func TestLimitsNeverExceedTheInheritedHardLimit(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	tier := newTestTier(t, sandbox.Options{Limits: sandbox.Limits{NoFile: 1 << 30}})
	fx := newFixture(t)
	r := run(t, tier, fx, "ulimit -n")
	if got := uint64(r.Enforced.RLimits.NoFile); got != lim.Max {
		t.Fatalf("nofile %d; want the inherited hard limit %d", got, lim.Max)
	}
	contains(t, r, fmt.Sprint(lim.Max))
}

func TestSelfTest(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{})
	if err := tier.SelfTest(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tier.Available(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestDoctorReportsEveryGuaranteeEnforced(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{})
	rep := sandbox.Doctor(context.Background(), tier, true)
	if !rep.Usable() {
		t.Fatalf("doctor: %s", rep.Problem)
	}
	if len(rep.Guarantees) != len(sandbox.GuaranteeNames()) {
		t.Fatalf("got %d guarantees", len(rep.Guarantees))
	}
	for i, g := range rep.Guarantees {
		if g.Name != sandbox.GuaranteeNames()[i] {
			t.Errorf("guarantee %d is %q; want %q", i, g.Name, sandbox.GuaranteeNames()[i])
		}
		if g.State != sandbox.StateEnforced {
			t.Errorf("%s: %s (%s)", g.Name, g.State, g.Evidence)
		}
		if !g.Probed {
			t.Errorf("%s was not probed: %s", g.Name, g.Evidence)
		}
		if g.Name == sandbox.GNetProxyOnly || g.Name == sandbox.GFSOverlayIsolated {
			t.Logf("%s: %s", g.Name, g.Evidence)
		}
	}
}
