//go:build linux

package cli

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/localsock"
	"github.com/ironvise/ironvise/internal/timerslack"
)

// binRun is one run of the real ironvise binary, with the packages it
// initialised (GODEBUG=inittrace=1) taken out of its stderr.
type binRun struct {
	code           int
	stdout, stderr string
	inits          []string
}

// thin reports whether the run went exec's thin path: the command line
// package never initialised.
func (r binRun) thin() bool {
	return !slices.Contains(r.inits, "github.com/ironvise/ironvise/internal/cli")
}

// heavyInits are packages the thin path must finish without initialising.
var heavyInits = []string{
	"net/http", "github.com/prometheus/", "google.golang.org/protobuf/", "modernc.org/", "github.com/spf13/cobra",
	"database/sql", "github.com/ironvise/ironvise/internal/ledger", "github.com/ironvise/ironvise/internal/scan",
	"github.com/ironvise/ironvise/internal/redact", "github.com/ironvise/ironvise/internal/server", "reflect",
}

func (r binRun) heavy() []string {
	var out []string
	for _, p := range r.inits {
		for _, h := range heavyInits {
			if p == h || strings.HasSuffix(h, "/") && strings.HasPrefix(p, h) {
				out = append(out, p)
			}
		}
	}
	return out
}

// buildIronvise builds cmd/ironvise as the release build does, into a
// directory everyone may read (a refused peer runs it as nobody).
func buildIronvise(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the end-to-end tests build the ironvise binary and need the go tool")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "ironvise")
	cmd := exec.Command(goTool, "build", "-trimpath", "-o", bin, "github.com/ironvise/ironvise/cmd/ironvise")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build ironvise: %v\n%s", err, out)
	}
	if err := exec.Command(bin, "version").Run(); errors.Is(err, syscall.EACCES) {
		t.Skipf("%s cannot be executed here (a noexec temporary directory?)", dir)
	}
	return bin
}

// buildIronviseExec builds cmd/ironvise-exec beside bin, as make build
// does.
func buildIronviseExec(t *testing.T, bin string) string {
	t.Helper()
	out := filepath.Join(filepath.Dir(bin), "ironvise-exec")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "github.com/ironvise/ironvise/cmd/ironvise-exec")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build ironvise-exec: %v\n%s", err, b)
	}
	return out
}

func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// runBin runs bin with exactly env, in dir, with inittrace on.
func runBin(t *testing.T, bin, dir string, env map[string]string, args ...string) binRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(envList(env), "GODEBUG=inittrace=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return finish(t, cmd, err, &out, &errb)
}

func finish(t *testing.T, cmd *exec.Cmd, err error, out, errb *bytes.Buffer) binRun {
	t.Helper()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	r := binRun{code: cmd.ProcessState.ExitCode(), stdout: out.String()}
	var rest []string
	for _, line := range strings.SplitAfter(errb.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "init" && strings.HasPrefix(f[2], "@") {
			r.inits = append(r.inits, f[1])
			continue
		}
		rest = append(rest, line)
	}
	r.stderr = strings.Join(rest, "")
	return r
}

// serveBin starts the binary's serve on env's data directory and waits
// for its exec socket; the returned stop ends it.
func serveBin(t *testing.T, bin, ws string, env map[string]string) (stop func()) {
	t.Helper()
	_, stop = serveBinPid(t, bin, ws, env)
	return stop
}

// serveBinPid is serveBin, also returning serve's process id.
func serveBinPid(t *testing.T, bin, ws string, env map[string]string) (pid int, stop func()) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--workspace", ws)
	cmd.Env = envList(env)
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sock := localsock.Path(env["ECTO_DATA_DIR"])
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited (%v): %s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			t.Fatalf("serve did not open %s: %s", sock, logs.String())
		}
	}
	return cmd.Process.Pid, func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Errorf("serve did not stop: %s", logs.String())
		}
	}
}

// withEnv is env and the extra KEY, VALUE pairs.
func withEnv(env map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func sameOutput(a, b binRun) bool {
	norm := func(s string) string { return perSession.ReplaceAllString(s, "X") }
	return a.code == b.code && norm(a.stdout) == norm(b.stdout) && norm(a.stderr) == norm(b.stderr)
}

// TestExecThinEndToEnd runs the real binary against a real serve: exec
// through the thin path, through the full command line's daemon path,
// with --no-daemon and as ironvise-exec gives the same output and exit
// code; everything the thin path does not handle behaves as the full
// command line (ironvise-exec hands it to the ironvise beside it); a
// refused peer, a daemon that hangs up and Ctrl-C end as they always did.
func TestExecThinEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts serve")
	}
	bin := buildIronvise(t)
	execBin := buildIronviseExec(t, bin)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(ws, "app.conf"), []byte("user=admin\npassword=hunter2\n"), 0o644)
	// The data directory is $XDG_DATA_HOME/ironvise, so that one case can
	// reach it without ECTO_DATA_DIR.
	xdg := t.TempDir()
	data := filepath.Join(xdg, "ironvise")
	os.Mkdir(data, 0o700)
	base := map[string]string{"ECTO_DATA_DIR": data, "HOME": t.TempDir(), "PATH": filepath.Dir(bin) + ":/usr/local/bin:/usr/bin:/bin"}
	// serve's configuration; an in-process exec gets the same.
	daemonEnv := withEnv(base, "LLM_BACKEND", "mock", "GUARD_REQUIRED", "false", "ECTO_BIND_PORT", "0", "ECTO_SANDBOX_TIMEOUT_SECS", "1")
	servePid, stopServe := serveBinPid(t, bin, ws, daemonEnv)
	defer stopServe()
	// The client's: the sandbox gets its locale and time zone either way.
	clientEnv := withEnv(base, "LANG", "C.UTF-8", "TZ", "UTC")
	// A configuration variable the thin path does not read (any value
	// config accepts) sends exec through the full command line.
	fullEnv := withEnv(clientEnv, "GUARD_REQUIRED", "false")
	inProcessEnv := withEnv(daemonEnv, "LANG", "C.UTF-8", "TZ", "UTC")

	t.Run("same output four ways", func(t *testing.T) {
		for _, c := range []struct {
			name string
			args []string
			code int
		}{
			{"allowed, a secret redacted", []string{"--", `echo "hi $LANG $TZ"; cat app.conf`}, 0},
			{"failing", []string{"--", "echo out; echo err >&2; exit 3"}, 3},
			{"denied", []string{"--", "sudo", "id"}, ExitExecDenied},
			{"timeout", []string{"--", "sleep 5"}, 128 + 9},
			{"flags", []string{"--justification=list the files", "--workspace", ws, "--", "ls", "-la"}, 0},
		} {
			t.Run(c.name, func(t *testing.T) {
				args := append([]string{"exec", "--workspace", ws}, c.args...)
				thin := runBin(t, bin, ws, clientEnv, args...)
				full := runBin(t, bin, ws, fullEnv, args...)
				inProc := runBin(t, bin, ws, inProcessEnv, append([]string{"exec", "--no-daemon"}, args[1:]...)...)
				small := runBin(t, execBin, ws, clientEnv, args[1:]...)
				if !thin.thin() || full.thin() || inProc.thin() || !small.thin() {
					t.Fatalf("paths: thin %v, full %v, in-process %v, ironvise-exec without hand-over %v", thin.thin(), full.thin(), inProc.thin(), small.thin())
				}
				if h := append(thin.heavy(), small.heavy()...); len(h) > 0 {
					t.Fatalf("the thin path initialised %v", h)
				}
				for _, r := range []*binRun{&thin, &full, &inProc, &small} {
					if c.name == "timeout" && r.code == 128+15 {
						r.code = c.code // the timeout's TERM may win over its KILL
					}
				}
				if thin.code != c.code {
					t.Fatalf("thin path: exit %d, want %d\n%s", thin.code, c.code, thin.stderr)
				}
				if !sameOutput(thin, full) || !sameOutput(thin, inProc) || !sameOutput(thin, small) {
					t.Fatalf("outputs differ:\nthin          %d %q %q\nfull          %d %q %q\nin-process    %d %q %q\nironvise-exec %d %q %q",
						thin.code, thin.stdout, thin.stderr, full.code, full.stdout, full.stderr, inProc.code, inProc.stdout, inProc.stderr,
						small.code, small.stdout, small.stderr)
				}
				if strings.Contains(thin.stdout+thin.stderr, "hunter2") {
					t.Fatalf("the secret was not redacted: %q", thin.stdout)
				}
				if c.name == "allowed, a secret redacted" && !strings.Contains(thin.stdout, "hi C.UTF-8 UTC") {
					t.Fatalf("the sandbox did not get the client's locale: %q", thin.stdout)
				}
				if code, _, errOut := runCLI(t, daemonEnv, "", "verify-session", sessionOf(t, thin.stderr)); code != 0 {
					t.Fatalf("verify-session: exit %d %s", code, errOut)
				}
			})
		}
	})

	t.Run("timer slack", func(t *testing.T) {
		// serve ran itself again with a coarse timer slack (package
		// timerslack), named the slack it was started with for its
		// commands, and gave its ready launcher the coarse one; each
		// command, through the daemon or standalone, has the slack this
		// test started it with, and not the variable.
		own := testThreadSlack(t)
		if own >= timerslack.Coarse {
			t.Skipf("this test runs with a timer slack of %d ns, as coarse as serve's already", own)
		}
		if got := procSlack(t, servePid); got != timerslack.Coarse {
			t.Fatalf("serve's timer slack is %d, want %d", got, timerslack.Coarse)
		}
		environ, err := os.ReadFile("/proc/" + strconv.Itoa(servePid) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		if want := timerslack.Var + "=" + strconv.FormatUint(own, 10); !slices.Contains(strings.Split(string(environ), "\x00"), want) {
			t.Fatalf("serve's environment lacks %s", want)
		}
		children := childPids(t, servePid)
		if len(children) == 0 {
			t.Error("serve has no ready launcher to check")
		}
		for _, child := range children {
			if got := procSlack(t, child); got != timerslack.Coarse {
				t.Errorf("serve's child %d has timer slack %d, want %d", child, got, timerslack.Coarse)
			}
		}
		cmd := []string{"--", "cat /proc/self/timerslack_ns; env | grep -c " + timerslack.Var + " || true"}
		want := strconv.FormatUint(own, 10) + "\n0\n"
		for _, r := range []binRun{
			runBin(t, execBin, ws, clientEnv, cmd...),
			runBin(t, bin, ws, clientEnv, append([]string{"exec"}, cmd...)...),
			runBin(t, bin, ws, inProcessEnv, append([]string{"exec", "--no-daemon"}, cmd...)...),
		} {
			if r.code != 0 || r.stdout != want {
				t.Errorf("exit %d, stdout %q, want %q: %s", r.code, r.stdout, want, r.stderr)
			}
		}
	})

	t.Run("data directory from XDG_DATA_HOME", func(t *testing.T) {
		env := withEnv(clientEnv, "XDG_DATA_HOME", xdg)
		delete(env, "ECTO_DATA_DIR")
		r := runBin(t, bin, ws, env, "exec", "--", "echo", "xdg")
		if !r.thin() || r.code != 0 || r.stdout != "xdg\n" {
			t.Fatalf("thin %v exit %d %q %q", r.thin(), r.code, r.stdout, r.stderr)
		}
	})

	t.Run("a standalone exec and a hook finish without a collector cycle", func(t *testing.T) {
		// shortLived: one command or hook event allocates about 4 MiB,
		// where the default goal would start a cycle; also with output
		// past the 64 KiB the observation keeps.
		// A tool's 200 KB of output to scan: three cycles at the default
		// goal.
		post := `{"session_id":"gc-1","cwd":"` + ws + `","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},` +
			`"tool_response":{"stdout":"` + strings.Repeat("x", 200000) + `","stderr":"","interrupted":false}}`
		for _, c := range []struct {
			name, stdin string
			args        []string
			minOut      int
		}{
			{"exec true", "", []string{"exec", "--no-daemon", "--workspace", ws, "--", "true"}, 0},
			{"exec with output", "", []string{"exec", "--no-daemon", "--workspace", ws, "--", "head -c 300000 /dev/zero | tr '\\0' x"}, 64 << 10},
			{"hook", post, []string{"hook", "claude-code", "--workspace", ws}, 0},
		} {
			cmd := exec.Command(bin, c.args...)
			cmd.Dir = ws
			cmd.Env = append(envList(inProcessEnv), "GODEBUG=gctrace=1")
			cmd.Stdin = strings.NewReader(c.stdin)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", c.name, err, errb.String())
			}
			for _, line := range strings.Split(errb.String(), "\n") {
				if strings.HasPrefix(line, "gc ") {
					t.Fatalf("%s: a collector cycle ran: %s", c.name, line)
				}
			}
			if out.Len() < c.minOut {
				t.Fatalf("%s: %d bytes of output", c.name, out.Len())
			}
		}
	})

	t.Run("fall through", func(t *testing.T) {
		dotEnv := t.TempDir()
		os.WriteFile(filepath.Join(dotEnv, ".env"), []byte("ECTO_SANDBOX_TIER=bogus\n"), 0o600)
		for _, c := range []struct {
			name string
			dir  string
			env  map[string]string
			args []string
			// ref is the same command line in-process (run) with its
			// environment, when that is the reference.
			refEnv map[string]string
		}{
			{"unknown flag", ws, clientEnv, []string{"exec", "--bogus", "--", "true"}, clientEnv},
			{"help", ws, clientEnv, []string{"exec", "--help"}, clientEnv},
			{"shorthand", ws, clientEnv, []string{"exec", "-h"}, clientEnv},
			{"no command", ws, clientEnv, []string{"exec", "--"}, clientEnv},
			{"invalid configuration", ws, withEnv(clientEnv, "ECTO_SANDBOX_TIER", "bogus"), []string{"exec", "--", "true"}, withEnv(clientEnv, "ECTO_SANDBOX_TIER", "bogus")},
			{"invalid configuration in .env", dotEnv, clientEnv, []string{"exec", "--", "true"}, withEnv(clientEnv, "ECTO_SANDBOX_TIER", "bogus")},
			{"relative data directory", ws, withEnv(clientEnv, "ECTO_DATA_DIR", "rel"), []string{"exec", "--", "true"}, withEnv(clientEnv, "ECTO_DATA_DIR", "rel")},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := runBin(t, bin, c.dir, c.env, c.args...)
				if r.thin() {
					t.Fatalf("went the thin path: %d %q", r.code, r.stderr)
				}
				code, out, errOut := runCLI(t, c.refEnv, "", c.args...)
				if !sameOutput(r, binRun{code: code, stdout: out, stderr: errOut}) {
					t.Fatalf("binary %d %q %q\nrun    %d %q %q", r.code, r.stdout, r.stderr, code, out, errOut)
				}
				// ironvise-exec hands the same command line to ironvise.
				small := runBin(t, execBin, c.dir, c.env, c.args[1:]...)
				if small.thin() || !sameOutput(small, r) {
					t.Fatalf("ironvise-exec: handed over %v, %d %q %q\nironvise:       %d %q %q", !small.thin(), small.code, small.stdout, small.stderr, r.code, r.stdout, r.stderr)
				}
			})
		}
		t.Run("no daemon answers", func(t *testing.T) {
			env := withEnv(clientEnv, "ECTO_DATA_DIR", t.TempDir())
			for _, r := range []binRun{runBin(t, bin, ws, env, "exec", "--", "echo", "alone"), runBin(t, execBin, ws, env, "--", "echo", "alone")} {
				if r.thin() || r.code != 0 || r.stdout != "alone\n" || !strings.Contains(r.stderr, "recorded in session") {
					t.Fatalf("thin %v exit %d %q %q", r.thin(), r.code, r.stdout, r.stderr)
				}
			}
		})
		t.Run("ironvise-exec alone", func(t *testing.T) {
			// Nothing to hand a command to: with a daemon the thin path
			// still runs it; without one nothing runs, and the message
			// says what to install.
			alone := filepath.Join(t.TempDir(), "ironvise-exec")
			b, _ := os.ReadFile(execBin)
			os.WriteFile(alone, b, 0o755)
			env := withEnv(clientEnv, "PATH", "/usr/bin:/bin")
			r := runBin(t, alone, ws, env, "--", "echo", "daemon")
			if !r.thin() || r.code != 0 || r.stdout != "daemon\n" {
				t.Fatalf("with a daemon: thin %v exit %d %q %q", r.thin(), r.code, r.stdout, r.stderr)
			}
			r = runBin(t, alone, ws, withEnv(env, "ECTO_DATA_DIR", t.TempDir()), "--", "echo", "none")
			if r.code != ExitUsage || r.stdout != "" || !strings.HasPrefix(r.stderr, "ironvise-exec: no ironvise next to this program or on PATH") || !strings.Contains(r.stderr, "nothing was run") {
				t.Fatalf("without: exit %d %q %q", r.code, r.stdout, r.stderr)
			}
		})
	})

	t.Run("interrupt", func(t *testing.T) {
		// A serve of its own, whose timeout does not end the command
		// before the test sees it run and interrupts it: the shared
		// serve's 1 s (the timeout case above) is too short for that on
		// a loaded machine.
		data := t.TempDir()
		defer serveBin(t, bin, ws, withEnv(daemonEnv, "ECTO_DATA_DIR", data, "ECTO_SANDBOX_TIMEOUT_SECS", "300"))()
		clientEnv, fullEnv := withEnv(clientEnv, "ECTO_DATA_DIR", data), withEnv(fullEnv, "ECTO_DATA_DIR", data)
		for i, env := range []map[string]string{clientEnv, fullEnv, clientEnv} {
			arg := strconv.Itoa(9970 + i) // a sleep no one else runs
			cmd := exec.Command(bin, "exec", "--workspace", ws, "--", "sleep", arg)
			if i == 2 {
				cmd = exec.Command(execBin, "--workspace", ws, "--", "sleep", arg)
			}
			cmd.Dir, cmd.Env = ws, append(envList(env), "GODEBUG=inittrace=1")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if !waitFor(func() bool { return sleeping(arg) }, 30*time.Second) {
				cmd.Process.Kill()
				t.Fatalf("the command never started: %s", errb.String())
			}
			cmd.Process.Signal(os.Interrupt)
			r := finish(t, cmd, cmd.Wait(), &out, &errb)
			if r.thin() != (i != 1) || r.code != ExitExecAborted || r.stderr != "ironvise: interrupted: context canceled; the daemon was told to stop the command\n" {
				t.Fatalf("thin %v exit %d %q", r.thin(), r.code, r.stderr)
			}
			if !waitFor(func() bool { return !sleeping(arg) }, 30*time.Second) {
				t.Fatal("the daemon did not stop the command")
			}
		}
	})

	t.Run("daemon hangs up mid-request", func(t *testing.T) {
		// Once connected the outcome is final: neither the full command
		// line nor ironvise-exec (i == 2) runs the command again.
		for i, env := range []map[string]string{clientEnv, fullEnv, clientEnv} {
			gone := t.TempDir()
			sock := localsock.Path(gone)
			os.MkdirAll(filepath.Dir(sock), 0o700)
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			conns := make(chan int, 1)
			go func() {
				n := 0
				for {
					c, err := ln.Accept()
					if err != nil {
						conns <- n
						return
					}
					n++
					var req localsock.Request
					localsock.ReadMessage(c, localsock.MaxRequest, &req)
					c.Close()
				}
			}()
			args := []string{"exec", "--", "echo", "once"}
			run := bin
			if i == 2 {
				run, args = execBin, args[1:]
			}
			r := runBin(t, run, ws, withEnv(env, "ECTO_DATA_DIR", gone), args...)
			ln.Close()
			want := "ironvise: the daemon at " + sock + " failed mid-request (EOF); the command may have run, so it is not run again (see 'ironvise sessions')\n"
			if r.thin() != (i != 1) || r.code != ExitExecAborted || r.stderr != want || r.stdout != "" {
				t.Fatalf("thin %v exit %d %q", r.thin(), r.code, r.stderr)
			}
			if n := <-conns; n != 1 {
				t.Fatalf("%d connections", n)
			}
			if ents, _ := os.ReadDir(gone); len(ents) != 1 {
				t.Fatalf("the command ran in-process too: the data directory holds %v", ents)
			}
		}
	})

	t.Run("refused peer", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to run as another uid")
		}
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("no setpriv")
		}
		// Only the peer uid check stands in the way: nobody may reach the
		// binary and the socket.
		sock := localsock.Path(data)
		for _, p := range []string{sock, bin, execBin} {
			for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
				if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o011 != 0o011 {
					os.Chmod(d, st.Mode().Perm()|0o011)
				}
			}
		}
		os.Chmod(sock, 0o666)
		var runs []binRun
		for i, env := range []map[string]string{clientEnv, fullEnv, clientEnv} {
			cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "exec", "--", "true")
			if i == 2 {
				cmd = exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", execBin, "--", "true")
			}
			cmd.Dir, cmd.Env = "/", append(envList(env), "GODEBUG=inittrace=1")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			runs = append(runs, finish(t, cmd, cmd.Run(), &out, &errb))
		}
		want := "ironvise: the daemon at " + sock + " refused this connection: peer uid 65534 is not the uid serve runs as (0); run exec as that user or with --no-daemon\n"
		if !runs[0].thin() || runs[1].thin() || runs[0].code != ExitUsage || runs[0].stderr != want || !sameOutput(runs[0], runs[1]) {
			t.Fatalf("thin %v %d %q\nfull %v %d %q", runs[0].thin(), runs[0].code, runs[0].stderr, runs[1].thin(), runs[1].code, runs[1].stderr)
		}
		if !runs[2].thin() || !sameOutput(runs[0], runs[2]) {
			t.Fatalf("ironvise-exec: thin %v %d %q", runs[2].thin(), runs[2].code, runs[2].stderr)
		}
	})
}

func waitFor(cond func() bool, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// sleeping reports whether a `sleep ARG` process runs.
func sleeping(arg string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if f := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"); len(f) == 2 && filepath.Base(f[0]) == "sleep" && f[1] == arg {
			return true
		}
	}
	return false
}

// testThreadSlack is the timer slack of this test's threads, which the
// processes it starts inherit.
func testThreadSlack(t *testing.T) uint64 {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ns, err := timerslack.Get()
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// procSlack is the timer slack of process pid's main thread.
func procSlack(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/timerslack_ns")
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// childPids are the processes whose parent is pid.
func childPids(t *testing.T, pid int) []int {
	t.Helper()
	var out []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
