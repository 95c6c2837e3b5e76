package guard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/verdict"
)

// The software enclave (Level 1) tests run the real ironvise binary as the
// worker and check it from outside: the kernel's /proc view, a ptrace
// attach and a core dump attempt by another process, and the host's
// refusal of workers that fail. Each has a control — the same check on a
// worker without the enclave, or a tampered worker — that comes out the
// other way, so the test fails if the enclave stops doing its part.

func softSetup() hostSetup {
	s := defaultSetup()
	s.enclave = enclave.LevelSoftware
	return s
}

// requireRoot skips tests that start processes as other users or change
// their limits.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test runs workers and attackers as uid 65534 and sets their resource limits")
	}
}

// fieldKB returns a "<n> kB" field of a /proc/<pid>/status text.
func fieldKB(t *testing.T, status, field string) uint64 {
	t.Helper()
	v := parseStatus(status)[field]
	n, err := statusKB(v)
	if err != nil {
		t.Fatalf("%s is %q in:\n%s", field, v, status)
	}
	return n
}

func startHost(t *testing.T, s hostSetup) (*Host, *logBuffer) {
	t.Helper()
	h, logs := newTestHost(t, s)
	if err := h.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v\nlog:\n%s", err, logs.String())
	}
	return h, logs
}

func TestSoftwareEnclaveEndToEnd(t *testing.T) {
	h, logs := startHost(t, softSetup())
	for step := 1; step <= 3; step++ {
		wantVerdict(t, review(t, h, step), verdict.Allow, verdict.GuardAllow, "ALLOW")
	}
	a := h.Attestation()
	if a == nil || a.Level != enclave.LevelSoftware || a.Measurement == nil {
		t.Fatalf("Attestation() = %+v; want a software measurement", a)
	}
	m := a.Measurement
	if !m.MemoryLocked || m.Dumpable || m.CoreLimit != 0 || !m.SecretsOverPipe || !m.NoNewPrivs || m.LandlockABI < 1 || m.Profile != WorkerProfile {
		t.Fatalf("measurement %+v lacks a Level 1 property", *m)
	}
	for _, c := range []string{"executable hash", "/proc/<pid>/status VmLck", "/proc/<pid>/status NoNewPrivs", "/proc/<pid>/status Seccomp"} {
		if !strings.Contains(strings.Join(m.HostChecked, "|"), c) {
			t.Errorf("host_checked %q lacks %q", m.HostChecked, c)
		}
	}
	waitForLog(t, logs, `enclave=software`)
	if h.Lost() != 0 || h.Err() != nil {
		t.Fatalf("losses %d, Err %v", h.Lost(), h.Err())
	}
}

// procStatus reads /proc/<pid>/status.
func procStatus(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSoftwareEnclaveProcStatus(t *testing.T) {
	cases := []struct {
		name    string
		setup   hostSetup
		locked  bool
		seccomp string
	}{
		{"software", softSetup(), true, "2"},
		// The control: the plain worker is confined but locks nothing.
		{"none", defaultSetup(), false, "2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, _ := startHost(t, tc.setup)
			wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
			st := procStatus(t, workerPID(h))
			lck, rss := fieldKB(t, st, "VmLck"), fieldKB(t, st, "VmRSS")
			if got := lck > 0; got != tc.locked {
				t.Fatalf("VmLck %d kB (VmRSS %d kB): locked = %v; want %v", lck, rss, got, tc.locked)
			}
			// VmLck counts the locked mappings whole, VmRSS only resident
			// pages, all of which lie in locked mappings: only the
			// unlockable vDSO pages may be resident and not locked.
			t.Logf("VmLck %d kB, VmRSS %d kB", lck, rss)
			if tc.locked && lck < rss-rss/100 {
				t.Fatalf("VmLck %d kB is well below VmRSS %d kB: not all of the worker's memory is locked", lck, rss)
			}
			for k, want := range map[string]string{"Seccomp": tc.seccomp, "NoNewPrivs": "1"} {
				if got := parseStatus(st)[k]; got != want {
					t.Errorf("%s: %q; want %q", k, got, want)
				}
			}
		})
	}
}

func TestSoftwareEnclaveKeyNotInEnviron(t *testing.T) {
	cases := []struct {
		name   string
		setup  hostSetup
		hasKey bool
	}{
		{"software", softSetup(), false},
		// The control: the plain worker's initial environment still holds
		// the key (it unsets it from its Go environment only).
		{"none", defaultSetup(), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, _ := startHost(t, tc.setup)
			env, err := os.ReadFile("/proc/" + strconv.Itoa(workerPID(h)) + "/environ")
			if err != nil {
				t.Fatal(err)
			}
			key := hex.EncodeToString(workerKey(h))
			got := bytes.Contains(env, []byte(key)) || bytes.Contains(env, []byte(KeyEnv+"="))
			if got != tc.hasKey {
				t.Fatalf("key in /proc/<pid>/environ: %v; want %v\n%q", got, tc.hasKey, env)
			}
			if !bytes.Contains(env, []byte("GUARD_LLM_BACKEND=mock")) {
				t.Fatalf("environ %q lacks the worker's configuration: the read proves nothing", env)
			}
		})
	}
}

// ptraceAs runs ptraceMain against pid as nobody and returns its answer.
func ptraceAs(t *testing.T, pid int) string {
	t.Helper()
	cmd := exec.Command(wrapperBinary(t), ptraceArg, strconv.Itoa(pid))
	asNobody(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ptrace helper: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestSoftwareEnclavePtraceRefused(t *testing.T) {
	requireRoot(t)
	cases := []struct {
		name  string
		level enclave.Level
		want  string
	}{
		{"software", enclave.LevelSoftware, "EPERM"},
		// The control: the same user may trace a plain worker.
		{"none", enclave.LevelNone, "ok"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := defaultSetup()
			s.enclave, s.prepare = tc.level, asNobody
			h, _ := startHost(t, s)
			if st := procStatus(t, workerPID(h)); !strings.Contains(st, "\nUid:\t65534\t") {
				t.Fatalf("worker does not run as nobody:\n%s", st)
			}
			if got := ptraceAs(t, workerPID(h)); got != tc.want {
				t.Fatalf("PTRACE_SEIZE by the same uid: %s; want %s", got, tc.want)
			}
			// As another user than root, the host also checked the
			// dumpable flag through the ownership of /proc/<pid>/environ.
			if a := h.Attestation(); a != nil && !strings.Contains(strings.Join(a.Measurement.HostChecked, "|"), "environ owner") {
				t.Errorf("host_checked %q lacks the /proc/<pid>/environ owner check", a.Measurement.HostChecked)
			}
			// The worker still answers (a seized tracee runs on).
			wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
		})
	}
}

// takeWorker removes the running worker from the host, for a test to end
// it itself.
func takeWorker(t *testing.T, h *Host) *workerProc {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.w
	if w == nil {
		t.Fatal("no worker running")
	}
	h.w = nil
	return w
}

func TestSoftwareEnclaveNoCoreDump(t *testing.T) {
	requireRoot(t)
	pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		t.Skipf("cannot read core_pattern: %v", err)
	}
	if p := strings.TrimSpace(string(pattern)); p != "core" && !strings.HasPrefix(p, "core.") {
		t.Skipf("core_pattern is %q, not a plain file name in the working directory (core, core.%%p …): the test cannot look for the file", p)
	}
	// Everything a dump needs: no core limit, a writable working
	// directory, and a Go runtime that ends on SIGABRT by raising it with
	// the default action (which dumps).
	setup := func(dir string) []string { return []string{"core=unlimited", "dir=" + dir} }
	abort := func(t *testing.T, dir string, cmd *exec.Cmd, wait func()) (syscall.WaitStatus, []string) {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGABRT); err != nil {
			t.Fatal(err)
		}
		wait()
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGABRT {
			t.Fatalf("process ended with %v; want killed by SIGABRT", cmd.ProcessState)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var cores []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "core") {
				cores = append(cores, e.Name())
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
		return ws, cores
	}
	t.Run("software worker", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := softSetup()
		s.wrap, s.env = setup(dir), []string{"GOTRACEBACK=crash"}
		h, _ := startHost(t, s)
		w := takeWorker(t, h)
		ws, cores := abort(t, dir, w.cmd, func() {
			_ = w.cmd.Wait()
			_ = w.stdin.Close()
			_ = w.stdout.Close()
			w.waitStderr()
		})
		if ws.CoreDump() || len(cores) > 0 {
			t.Fatalf("core dumped %v, core files %q; want neither", ws.CoreDump(), cores)
		}
	})
	// The control: an ordinary process under the same wrapper, limits,
	// directory, environment and signal does dump, so the setup can
	// produce a core. (The plain guard worker leaves no core file here
	// either: its Landlock domain may not create files, which the kernel
	// enforces on the dump too. Non-dumpable also covers what Landlock
	// does not: a piped core_pattern and ptrace, see
	// TestSoftwareEnclavePtraceRefused.)
	t.Run("control: unhardened process", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cmd := exec.Command(wrapperBinary(t), append(append([]string{execArg}, setup(dir)...), "--", wrapperBinary(t), sleepArg)...)
		cmd.Env = []string{"GOTRACEBACK=crash"}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Signal it only once it runs sleepMain: the wrapper has set the
		// core limit and the directory and exec'd it, and the runtime has
		// installed its signal handlers (GOTRACEBACK=crash is the
		// runtime's, not the default action's, way to dump). A fixed wait
		// of 300 ms failed once on a loaded CI machine: a signal that
		// reaches the wrapper before it set the core limit dumps nothing.
		ready := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(out).ReadString('\n')
			ready <- line
		}()
		select {
		case line := <-ready:
			if line != sleepReady {
				t.Fatalf("the control process printed %q before it slept; want %q", line, sleepReady)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the control process did not start within 30 s")
		}
		ws, cores := abort(t, dir, cmd, func() { _ = cmd.Wait() })
		if !ws.CoreDump() || len(cores) == 0 {
			t.Fatalf("core dumped %v, core files %q; want both: the setup cannot produce a dump", ws.CoreDump(), cores)
		}
	})
}

func TestSoftwareEnclaveMemlockRefused(t *testing.T) {
	requireRoot(t)
	s := softSetup()
	// As nobody, without CAP_IPC_LOCK, 64 KiB cannot hold a Go program.
	s.wrap = []string{"memlock=65536", "nobody"}
	h, _ := newTestHost(t, s)
	err := h.Start(context.Background())
	if !errors.Is(err, ErrEnclave) {
		t.Fatalf("Start: %v; want ErrEnclave", err)
	}
	for _, want := range []string{"mlockall", "RLIMIT_MEMLOCK is 65536 bytes", "the worker maps", "LimitMEMLOCK=infinity", "GUARD_ENCLAVE=none"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start error lacks %q:\n%v", want, err)
		}
	}
	// Never a silent downgrade: the session's guard stays down.
	wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardUnavailable, "RLIMIT_MEMLOCK")
	if !errors.Is(h.Err(), ErrEnclave) || h.Attestation() != nil {
		t.Fatalf("Err() = %v, Attestation() = %v; want ErrEnclave and none", h.Err(), h.Attestation())
	}
	if got := h.Start(context.Background()); !errors.Is(got, ErrEnclave) {
		t.Fatalf("second Start: %v; want the same ErrEnclave", got)
	}
}

func TestSoftwareEnclaveRefusals(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T) hostSetup
		want  string
	}{
		{"hash of another executable", func(t *testing.T) hostSetup {
			s := softSetup()
			// The host expects the test binary; the worker is ironvise.
			s.hashPath = wrapperBinary(t)
			return s
		}, "worker executable SHA-256"},
		{"tampered hello MAC", func(*testing.T) hostSetup {
			s := withMITM("flipmac")
			s.enclave = enclave.LevelSoftware
			return s
		}, "hello: " + ErrBadMAC.Error()},
		{"forged hello from an unhardened process", func(*testing.T) hostSetup {
			s := withMITM("forge")
			s.enclave = enclave.LevelSoftware
			return s
		}, "not all of the worker's memory is locked"},
		{"worker without a hello", func(*testing.T) hostSetup {
			s := withMITM("die")
			s.enclave = enclave.LevelSoftware
			return s
		}, "ended before its hello"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, _ := newTestHost(t, tc.setup(t))
			err := h.Start(context.Background())
			if !errors.Is(err, ErrEnclave) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v; want ErrEnclave containing %q", err, tc.want)
			}
			if workerPID(h) != 0 {
				t.Fatal("a refused worker is still running")
			}
			wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardUnavailable, tc.want)
		})
	}
}

func TestSoftwareEnclaveRestartChecksAgain(t *testing.T) {
	t.Run("replacement checked and used", func(t *testing.T) {
		t.Parallel()
		h, _ := startHost(t, softSetup())
		first, pid := h.Attestation(), workerPID(h)
		killWorker(t, h)
		wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardUnavailable, "")
		wantVerdict(t, review(t, h, 2), verdict.Allow, verdict.GuardAllow, "ALLOW")
		if workerPID(h) == pid || workerPID(h) == 0 {
			t.Fatalf("worker pid %d after the loss of %d; want a new worker", workerPID(h), pid)
		}
		if got := h.Attestation(); got == nil || fmt.Sprint(*got.Measurement) != fmt.Sprint(*first.Measurement) {
			t.Fatalf("Attestation() = %+v; want the first worker's %+v", got, first)
		}
	})
	t.Run("replacement refused", func(t *testing.T) {
		t.Parallel()
		h, _ := startHost(t, softSetup())
		killWorker(t, h)
		wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardUnavailable, "")
		// The replacement is checked like the first: here its hash no
		// longer matches what the host expects.
		h.hashPath = wrapperBinary(t)
		wantVerdict(t, review(t, h, 2), verdict.Deny, verdict.GuardUnavailable, "worker executable SHA-256")
		if err := h.Err(); !errors.Is(err, ErrEnclave) {
			t.Fatalf("Err() = %v; want ErrEnclave", err)
		}
	})
}
