package software

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Harden changes the whole process for good, so each test runs it in a
// child: this test binary again, told what to do by childEnv. The parent
// then checks the child from outside, through /proc, signals and the file
// system, against a control child that does not harden.

const childEnv = "IRONVISE_SOFTWARE_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	code := m.Run()
	if copyPath != "" {
		_ = os.RemoveAll(filepath.Dir(copyPath))
	}
	os.Exit(code)
}

// childMain: "harden" or "plain", optionally with ",memlock=N" (set the
// limit first); it prints Harden's result as JSON (or "plain"), then waits
// for stdin to end.
func childMain(mode string) int {
	name, opt, _ := strings.Cut(mode, ",")
	if v, ok := strings.CutPrefix(opt, "memlock="); ok {
		n, _ := strconv.ParseUint(v, 10, 64)
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			fmt.Printf("{\"error\":%q}\n", err.Error())
			return 0
		}
	}
	out := map[string]any{}
	if name == "harden" {
		h, err := Harden()
		out["hardening"] = h
		if err != nil {
			out["error"] = err.Error()
			var he *HardenError
			out["step"] = ""
			if errors.As(err, &he) {
				out["step"] = he.Step
			}
		}
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

var (
	copyOnce sync.Once
	copyPath string
	copyErr  error
)

// publicBinary is a copy of this test binary that uid 65534 may run.
func publicBinary(t *testing.T) string {
	t.Helper()
	copyOnce.Do(func() {
		var dir, self string
		var b []byte
		if dir, copyErr = os.MkdirTemp("", "ironvise-software-test-"); copyErr != nil {
			return
		}
		if copyErr = os.Chmod(dir, 0o755); copyErr != nil {
			return
		}
		if self, copyErr = os.Executable(); copyErr != nil {
			return
		}
		if b, copyErr = os.ReadFile(self); copyErr != nil {
			return
		}
		copyPath = filepath.Join(dir, "software.test")
		copyErr = os.WriteFile(copyPath, b, 0o755)
	})
	if copyErr != nil {
		t.Fatal(copyErr)
	}
	return copyPath
}

type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out map[string]any
}

// startChild runs the test binary in mode; nobody runs it as uid/gid
// 65534 (keeping CAP_IPC_LOCK when lockCap); core raises RLIMIT_CORE in
// the child's working directory dir.
func startChild(t *testing.T, mode string, nobody, lockCap bool, dir string, env ...string) *child {
	t.Helper()
	if nobody && os.Geteuid() != 0 {
		t.Skip("needs root: the child runs as uid 65534")
	}
	cmd := exec.Command(publicBinary(t), "-test.run=^$")
	cmd.Env = append([]string{childEnv + "=" + mode}, env...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if nobody {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
		if lockCap {
			cmd.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_IPC_LOCK}
		}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// stderr is dropped: the aborted children print a goroutine dump.
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, in: in}
	t.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if err := json.NewDecoder(out).Decode(&c.out); err != nil {
		t.Fatalf("child output: %v", err)
	}
	return c
}

func (c *child) status(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

func kb(t *testing.T, v string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", v, err)
	}
	return n
}

func TestSoftwareHarden(t *testing.T) {
	cases := []struct {
		mode     string
		hardened bool
	}{
		{"harden", true},
		// The control: the same child, not hardened.
		{"plain", false},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			c := startChild(t, tc.mode, true, true, "/")
			if e, ok := c.out["error"]; ok {
				t.Fatalf("Harden: %v", e)
			}
			st := c.status(t)
			lck, rss := kb(t, st["VmLck"]), kb(t, st["VmRSS"])
			if (lck > 0) != tc.hardened || tc.hardened && lck < rss {
				t.Fatalf("VmLck %d kB, VmRSS %d kB; want locked=%v covering VmRSS", lck, rss, tc.hardened)
			}
			// A non-dumpable process's /proc files belong to root.
			fi, err := os.Stat("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/environ")
			if err != nil {
				t.Fatal(err)
			}
			owner := fi.Sys().(*syscall.Stat_t).Uid
			if (owner == 0) != tc.hardened {
				t.Fatalf("/proc/<pid>/environ owned by %d; want root=%v", owner, tc.hardened)
			}
			if tc.hardened {
				h := c.out["hardening"].(map[string]any)
				if h["MemoryLocked"] != true || h["Dumpable"] != false || h["CoreLimit"] != 0.0 {
					t.Fatalf("Hardening %v; want locked, not dumpable, core 0", h)
				}
			}
		})
	}
}

func TestSoftwareHardenMemlockRefused(t *testing.T) {
	// As nobody without CAP_IPC_LOCK, 64 KiB cannot hold a Go program.
	c := startChild(t, "harden,memlock=65536", true, false, "/")
	e, _ := c.out["error"].(string)
	if c.out["step"] != "mlockall(MCL_CURRENT|MCL_FUTURE)" {
		t.Fatalf("step %v, error %q; want the mlockall step", c.out["step"], e)
	}
	for _, want := range []string{"RLIMIT_MEMLOCK is 65536 bytes", "the worker maps ", "ulimit -l unlimited", "CAP_IPC_LOCK", "GUARD_ENCLAVE=none"} {
		if !strings.Contains(e, want) {
			t.Errorf("error %q lacks %q", e, want)
		}
	}
}

func TestSoftwareHardenNoCoreDump(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: raises RLIMIT_CORE in the child")
	}
	pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if p := strings.TrimSpace(string(pattern)); err != nil || p != "core" && !strings.HasPrefix(p, "core.") {
		t.Skipf("core_pattern is %q (%v), not a plain file name in the working directory: the test cannot look for the file", p, err)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil || lim.Max != unix.RLIM_INFINITY {
		t.Skipf("RLIMIT_CORE hard limit %d: cannot give the child an unlimited core size", lim.Max)
	}
	cases := []struct {
		mode  string
		dumps bool
	}{
		{"harden", false},
		// The control: the same child, same limit and directory, dumps.
		{"plain", true},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			// The child inherits the raised limit; Harden must lower it.
			old := lim
			raised := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
			if err := unix.Setrlimit(unix.RLIMIT_CORE, &raised); err != nil {
				t.Fatal(err)
			}
			c := startChild(t, tc.mode, false, false, dir, "GOTRACEBACK=crash")
			_ = unix.Setrlimit(unix.RLIMIT_CORE, &old)
			time.Sleep(50 * time.Millisecond)
			if err := c.cmd.Process.Signal(syscall.SIGABRT); err != nil {
				t.Fatal(err)
			}
			_ = c.cmd.Wait()
			ws := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
			entries, _ := os.ReadDir(dir)
			var cores []string
			for _, e := range entries {
				cores = append(cores, e.Name())
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
			if !ws.Signaled() || ws.CoreDump() != tc.dumps || (len(cores) > 0) != tc.dumps {
				t.Fatalf("status %v, core dumped %v, files %q; want dumped=%v", c.cmd.ProcessState, ws.CoreDump(), cores, tc.dumps)
			}
		})
	}
}

func TestSoftwareSecret(t *testing.T) {
	s, err := NewSecret(40)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Bytes()
	if len(b) != 40 || cap(b) != 40 || s.Len() != 40 {
		t.Fatalf("Bytes len %d cap %d; want 40 and 40 (appending must not spill into the page)", len(b), cap(b))
	}
	for i := range b {
		b[i] = 0xa5
	}
	// The mapping's flags, as the kernel reports them: lo (locked), dd
	// (not dumped), wf (wiped on fork).
	flags := mappingFlags(t, fmt.Sprintf("%x", &b[0]))
	for _, want := range []string{"lo", "dd", "wf"} {
		if !strings.Contains(" "+flags+" ", " "+want+" ") {
			t.Errorf("VmFlags %q lack %q", flags, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Bytes() != nil {
		t.Fatal("Bytes after Close is not nil")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := NewSecret(0); err == nil {
		t.Fatal("NewSecret(0) succeeded")
	}
}

// mappingFlags returns the VmFlags of the mapping that starts at addr (hex,
// "0x…") in /proc/self/smaps.
func mappingFlags(t *testing.T, addr string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.TrimPrefix(addr, "0x")
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			s, _, _ := strings.Cut(f[0], "-")
			in = strings.TrimLeft(s, "0") == strings.TrimLeft(start, "0")
		}
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no mapping at %s in /proc/self/smaps", addr)
	return ""
}
