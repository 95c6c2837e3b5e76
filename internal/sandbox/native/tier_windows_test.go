package native

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// These tests run the tier for real: on Windows in the public CI
// (.github/workflows/platforms.yml) and under Wine in .ci/run.

// helperArg marks an invocation of this test binary as a helper process
// started from inside the sandbox (TestHelperProcess).
const helperArg = "ironvise-helper"

// underWine reports whether the tests run under Wine, which exports
// wine_get_version from its ntdll.
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// tempDir is t.TempDir, removed without os.RemoveAll: Go's RemoveAll
// deletes through NtSetInformationFile(FileDispositionInformationEx), a
// class Wine 8 does not implement ("Invalid function"), while os.Remove
// (DeleteFileW, RemoveDirectoryW) works on Windows and Wine alike.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ironvise-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var paths []string
		_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			paths = append(paths, p)
			return err
		})
		// Children before their parents. A process killed with its job
		// may hold a handle for a moment after it is signalled: retry
		// for two seconds, as t.TempDir does on Windows.
		for i := len(paths) - 1; i >= 0; i-- {
			for end := time.Now().Add(2 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				err := os.Remove(paths[i])
				if err == nil || errors.Is(err, fs.ErrNotExist) {
					break
				}
				if time.Now().After(end) {
					t.Errorf("clean up: %v", err)
					break
				}
			}
		}
	})
	return dir
}

func newWindowsTier(t *testing.T) *Tier {
	t.Helper()
	tier, err := New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tier.(*Tier)
}

// runOK runs command in ws and fails the test unless it ran in its job.
func runOK(t *testing.T, tier *Tier, ws, command string, mod ...func(*sandbox.Request)) sandbox.Result {
	t.Helper()
	req := sandbox.Request{Command: command, Workspace: ws, Timeout: 60 * time.Second}
	for _, m := range mod {
		m(&req)
	}
	r := tier.Run(context.Background(), req)
	if r.Status != sandbox.StatusOK && r.Status != sandbox.StatusTimeout {
		t.Fatalf("%s: %s", command, r.Headline())
	}
	if r.Enforced == nil || len(r.Enforced.JobObject) == 0 {
		t.Fatalf("%s: no job object recorded: %+v", command, r.Enforced)
	}
	return r
}

// helperCommand is the command line that runs this test binary as the
// helper with args.
func helperCommand(t *testing.T, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return syscall.EscapeArg(exe) + " -test.run=^TestHelperProcess$ -- " + helperArg + " " + strings.Join(args, " ")
}

func TestCmdLine(t *testing.T) {
	for _, tc := range []struct{ comspec, command, want string }{
		{`C:\Windows\system32\cmd.exe`, `echo "a b"`, `C:\Windows\system32\cmd.exe /D /S /C "echo "a b""`},
		{`C:\Win dows\system32\cmd.exe`, `dir`, `"C:\Win dows\system32\cmd.exe" /D /S /C "dir"`},
		{`C:\Windows\system32\cmd.exe`, `"C:\Program Files\x.exe" "arg"`, `C:\Windows\system32\cmd.exe /D /S /C ""C:\Program Files\x.exe" "arg""`},
	} {
		if got := cmdLine(tc.comspec, tc.command); got != tc.want {
			t.Errorf("cmdLine(%q, %q) = %s; want %s", tc.comspec, tc.command, got, tc.want)
		}
	}
}

// TestWindowsExternalCommand: programs outside cmd.exe are found through
// Path and PATHEXT (before the fix, commands ran with neither, and every
// one of these was "not recognized").
func TestWindowsExternalCommand(t *testing.T) {
	tier := newWindowsTier(t)
	for _, tc := range []struct{ name, command, want string }{
		{"cmd.exe by its bare name", `cmd /D /C echo ext-ok`, "ext-ok"},
		{"a program of the system directory", `hostname`, ""},
		{"this test binary by absolute path", helperCommand(t, "echo", "helper-ok"), "helper-ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runOK(t, tier, tempDir(t), tc.command)
			if r.ExitCode == nil || *r.ExitCode != 0 || strings.TrimSpace(r.Stdout) == "" || !strings.Contains(r.Stdout, tc.want) {
				t.Fatalf("%s: %s stdout %q stderr %q; want exit 0 printing %q", tc.command, r.Headline(), r.Stdout, r.Stderr, tc.want)
			}
		})
	}
}

// TestWindowsQuotes: a command reaches cmd.exe exactly as written, double
// quotes included (before the fix, os/exec escaped them with backslashes
// and cmd.exe printed \"a b\").
func TestWindowsQuotes(t *testing.T) {
	tier := newWindowsTier(t)
	ws := tempDir(t)
	if err := os.MkdirAll(filepath.Join(ws, "dir with space"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "dir with space", "f.txt"), []byte("quoted-path-ok\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, command, want string }{
		{"quoted argument", `echo "a b"`, `"a b"`},
		{"quote at the very end", `echo x "end"`, `x "end"`},
		{"empty quotes", `echo ""`, `""`},
		{"special characters inside quotes", `echo "a & b | c > d"`, `"a & b | c > d"`},
		{"path with a space", `type "dir with space\f.txt"`, "quoted-path-ok"},
		{"nested cmd.exe", `cmd /D /C echo "n e s t"`, `"n e s t"`},
		{"quoted program path", `"%ComSpec%" /D /C echo "q p"`, `"q p"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runOK(t, tier, ws, tc.command)
			if got := strings.TrimSpace(r.Stdout); r.ExitCode == nil || *r.ExitCode != 0 || got != tc.want {
				t.Fatalf("%s: %s printed %q (stderr %q); want %q", tc.command, r.Headline(), got, r.Stderr, tc.want)
			}
		})
	}
}

// TestWindowsEnvironment: the command gets the machine's Path, ComSpec,
// PATHEXT and SystemRoot, set by the tier: a value in the request does not
// replace them, and nothing of IronVise's own environment passes.
func TestWindowsEnvironment(t *testing.T) {
	t.Setenv("IRONVISE_TEST_SECRET", "must-not-pass")
	tier := newWindowsTier(t)
	r := runOK(t, tier, tempDir(t), "set", func(req *sandbox.Request) {
		req.Env = []string{`PATH=C:\agent-chosen`, `ComSpec=C:\agent-chosen\cmd.exe`, "LANG=en_US.UTF-8", "IRONVISE_TEST_SECRET=must-not-pass"}
	})
	env := map[string]string{}
	for _, line := range strings.Split(r.Stdout, "\n") {
		if k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), "="); ok {
			env[strings.ToUpper(k)] = v
		}
	}
	for _, k := range []string{"PATH", "COMSPEC", "PATHEXT", "SYSTEMROOT", "WINDIR"} {
		if env[k] == "" {
			t.Errorf("%s is not set in the command's environment:\n%s", k, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "agent-chosen") || strings.Contains(r.Stdout, "must-not-pass") {
		t.Errorf("a value from the request or from IronVise's environment passed:\n%s", r.Stdout)
	}
	if fi, err := os.Stat(env["COMSPEC"]); err != nil || fi.IsDir() {
		t.Errorf("ComSpec=%q is not a file: %v", env["COMSPEC"], err)
	}
	if !strings.Contains(strings.ToUpper(env["PATHEXT"]), ".EXE") {
		t.Errorf("PATHEXT=%q lacks .EXE", env["PATHEXT"])
	}
	if env["TEMP"] != r.Enforced.ScratchDir || env["USERPROFILE"] != r.Enforced.ScratchDir {
		t.Errorf("TEMP=%q USERPROFILE=%q; want the scratch directory %q", env["TEMP"], env["USERPROFILE"], r.Enforced.ScratchDir)
	}
	if env["LANG"] != "en_US.UTF-8" {
		t.Errorf("LANG=%q; want the allowlisted value of the request", env["LANG"])
	}
}

// TestWindowsScratchRemoved: the scratch directory, the command's TEMP,
// does not outlive it.
func TestWindowsScratchRemoved(t *testing.T) {
	if underWine() {
		t.Skip("under Wine 8 the scratch directory cannot be removed: os.RemoveAll deletes through NtSetInformationFile(FileDispositionInformationEx), an information class Wine 8 does not implement (STATUS_NOT_IMPLEMENTED, \"Invalid function\")")
	}
	tier := newWindowsTier(t)
	r := runOK(t, tier, tempDir(t), `mkdir "%TEMP%\sub" && echo x > "%TEMP%\sub\f.txt" && type "%TEMP%\sub\f.txt"`)
	if r.ExitCode == nil || *r.ExitCode != 0 || !strings.Contains(r.Stdout, "x") {
		t.Fatalf("%s: stdout %q stderr %q", r.Headline(), r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(r.Enforced.ScratchDir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("scratch directory %s outlived the command: %v", r.Enforced.ScratchDir, err)
	}
}

// TestWindowsSelfTest: the self-test passes (before the fix it could not
// have: its probe is an external program with a quoted argument).
func TestWindowsSelfTest(t *testing.T) {
	if err := newWindowsTier(t).SelfTest(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestWindowsSelfTestProbeCatchesDefects: the self-test's probe, run by a
// real cmd.exe the two ways the tier used to run commands, does not print
// what the self-test wants, so the self-test fails on either defect.
func TestWindowsSelfTestProbeCatchesDefects(t *testing.T) {
	env, comspec, err := systemEnv()
	if err != nil {
		t.Fatal(err)
	}
	var full []string
	for k, v := range env {
		full = append(full, k+"="+v)
	}
	for _, tc := range []struct {
		name string
		env  []string
		line string // "" for os/exec's own quoting of the arguments
	}{
		{"no Path or PATHEXT", []string{"SystemRoot=" + env["SystemRoot"]}, cmdLine(comspec, selfTestCommand)},
		{"os/exec quoting", full, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := exec.Command(comspec, "/C", selfTestCommand)
			c.Env, c.Dir = tc.env, tempDir(t)
			if tc.line != "" {
				c.SysProcAttr = &syscall.SysProcAttr{CmdLine: tc.line}
			}
			out, _ := c.CombinedOutput()
			if strings.TrimSpace(string(out)) == selfTestWant {
				t.Fatalf("the probe printed %s despite the defect; the self-test could not catch it", out)
			}
			t.Logf("the probe printed %q", out)
		})
	}
}

// waitGone reports whether process pid is gone within d.
func waitGone(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		// No such process any more.
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, uint32(d.Milliseconds()))
	return err == nil && ev == windows.WAIT_OBJECT_0
}

// killPID ends a process the test left behind.
func killPID(pid int) {
	if h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pid)); err == nil {
		_ = windows.TerminateProcess(h, 1)
		windows.CloseHandle(h)
	}
}

// readPID reads the pid a helper wrote to file.
func readPID(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the helper wrote no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	t.Cleanup(func() { killPID(pid) })
	return pid
}

// TestWindowsJobKillsChildren: a process the command started and left
// running (detached, in a new process group, having tried to break away
// from the job) is gone once Run has returned.
func TestWindowsJobKillsChildren(t *testing.T) {
	tier := newWindowsTier(t)
	ws := tempDir(t)
	pidFile := filepath.Join(ws, "grandchild.pid")
	r := runOK(t, tier, ws, helperCommand(t, "spawn", syscall.EscapeArg(pidFile)))
	if r.ExitCode == nil || *r.ExitCode != 0 || !strings.Contains(r.Stdout, "SPAWNED") {
		t.Fatalf("spawner: %s stdout %q stderr %q", r.Headline(), r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "BREAKAWAY-REFUSED") {
		t.Errorf("a child could leave the job (CREATE_BREAKAWAY_FROM_JOB): %q", r.Stdout)
	}
	pid := readPID(t, pidFile)
	if !waitGone(t, pid, 5*time.Second) {
		t.Fatalf("the command's child %d outlived it", pid)
	}
}

// TestWindowsTimeoutKillsTree: at the wall-clock limit the job is
// terminated, the command and its children with it.
func TestWindowsTimeoutKillsTree(t *testing.T) {
	tier := newWindowsTier(t)
	ws := tempDir(t)
	pidFile := filepath.Join(ws, "sleeper.pid")
	start := time.Now()
	r := runOK(t, tier, ws, helperCommand(t, "sleep", syscall.EscapeArg(pidFile)), func(req *sandbox.Request) {
		req.Timeout = 3 * time.Second
	})
	if r.Status != sandbox.StatusTimeout {
		t.Fatalf("status %s (%s); want timeout", r.Status, r.Headline())
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("Run returned after %v with a 3 s limit", took)
	}
	if pid := readPID(t, pidFile); !waitGone(t, pid, 5*time.Second) {
		t.Fatalf("process %d outlived the timeout", pid)
	}
}

// TestHelperProcess is not a test: it is the program the tests above run
// inside the sandbox, selected by helperArg after "--".
func TestHelperProcess(t *testing.T) {
	args := flag.Args()
	if len(args) < 2 || args[0] != helperArg {
		t.Skip("helper process only")
	}
	code := helperMain(args[1:])
	os.Exit(code)
}

// helperMain: "echo WORD" prints WORD; "sleep FILE" writes its pid to FILE
// and sleeps; "spawn FILE" starts a detached "sleep FILE" (after trying to
// break away from the job), waits until it wrote its pid and exits.
func helperMain(args []string) int {
	switch args[0] {
	case "echo":
		fmt.Println(args[1])
		return 0
	case "sleep":
		if err := os.WriteFile(args[1], []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		time.Sleep(2 * time.Minute)
		return 0
	case "spawn":
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		start := func(flags uint32) (*exec.Cmd, error) {
			c := exec.Command(exe, "-test.run=^TestHelperProcess$", "--", helperArg, "sleep", args[1])
			c.SysProcAttr = &syscall.SysProcAttr{CreationFlags: flags}
			return c, c.Start()
		}
		detached := uint32(windows.DETACHED_PROCESS | windows.CREATE_NEW_PROCESS_GROUP)
		c, err := start(detached | windows.CREATE_BREAKAWAY_FROM_JOB)
		if err != nil {
			fmt.Println("BREAKAWAY-REFUSED:", err)
			if c, err = start(detached); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		} else {
			fmt.Println("BREAKAWAY-ALLOWED")
		}
		_ = c.Process.Release()
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(args[1]); err == nil && len(b) > 0 {
				fmt.Println("SPAWNED", string(b))
				return 0
			}
		}
		fmt.Fprintln(os.Stderr, "the detached child wrote no pid within 20 s")
		return 2
	}
	fmt.Fprintln(os.Stderr, "unknown helper command", args)
	return 2
}

// TestWindowsProxyModeAborts: proxy mode is not built on this tier: the run
// is aborted before anything runs.
func TestWindowsProxyModeAborts(t *testing.T) {
	tier, ws := newWindowsTier(t), tempDir(t)
	r := tier.Run(context.Background(), sandbox.Request{Command: `echo x > ran.txt`, Workspace: ws, Timeout: 30 * time.Second, Egress: egress.NewRules(nil, nil)})
	if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, "proxy mode is not supported on this tier yet") {
		t.Fatalf("%s", r.Headline())
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
		t.Fatal("the command ran")
	}
}

// TestWindowsOverlayModeAborts: overlay mode is not built on this tier:
// the run is aborted before anything runs, never run on the real
// workspace.
func TestWindowsOverlayModeAborts(t *testing.T) {
	tier, ws, dirs := newWindowsTier(t), tempDir(t), tempDir(t)
	ov := &sandbox.Overlay{Upper: filepath.Join(dirs, "upper"), Work: filepath.Join(dirs, "work")}
	r := tier.Run(context.Background(), sandbox.Request{Command: `echo x > ran.txt`, Workspace: ws, Timeout: 30 * time.Second, Overlay: ov})
	if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, "overlay mode is not supported on this tier yet") {
		t.Fatalf("%s", r.Headline())
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
		t.Fatal("the command ran")
	}
}
