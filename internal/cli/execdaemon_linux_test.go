//go:build linux

package cli

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/execclient"
	"github.com/ironvise/ironvise/internal/localsock"
)

// startServe runs `ironvise serve` in-process on env's data directory and
// waits until its exec socket answers; the returned stop ends it.
func startServe(t testing.TB, env map[string]string, ws string) (stop func()) {
	t.Helper()
	stop, _ = startServeArgs(t, env, "--workspace", ws)
	return stop
}

// startServeArgs is startServe with serve's arguments, also returning
// what serve writes on stderr.
func startServeArgs(t testing.TB, env map[string]string, args ...string) (stop func(), stderr *lockedBuffer) {
	t.Helper()
	serveEnv := map[string]string{"LLM_BACKEND": "mock", "GUARD_REQUIRED": "false", "ECTO_BIND_PORT": "0"}
	for k, v := range env {
		serveEnv[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout lockedBuffer
	stderr = &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"ironvise", "serve"}, args...), strings.NewReader(""), &stdout, stderr, config.MapLookup(serveEnv))
	}()
	sock := localsock.Path(env["ECTO_DATA_DIR"])
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not open %s: %s", sock, stderr.String())
		}
	}
	return func() {
		cancel()
		select {
		case c := <-code:
			if c != 0 {
				t.Errorf("serve exit %d: %s", c, stderr.String())
			}
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop")
		}
		if _, err := os.Lstat(sock); err == nil {
			t.Error("the socket outlived serve")
		}
	}, stderr
}

// execDaemon runs exec through the daemon's socket, failing the test if
// no daemon handled it.
func execDaemon(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &out, stderr: &errb, lookup: config.MapLookup(env)}
	o := execOptions{Justification: execclient.DefaultJustification}
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--workspace":
			i++
			o.Workspace = args[i]
		case "--workspace-mode":
			i++
			o.WorkspaceMode = args[i]
		case "--":
			o.Command = execclient.JoinCommand(args[i+1:])
			i = len(args)
		}
	}
	handled, err := a.execViaDaemon(o, &resultOutput{})
	if !handled {
		t.Fatal("no daemon handled the exec")
	}
	code := 0
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err != nil {
			errb.WriteString("ironvise: " + ee.err.Error() + "\n")
		}
	} else if err != nil {
		t.Fatalf("exec through the daemon: %v", err)
	}
	return code, out.String(), errb.String()
}

// perSession matches what differs between two sessions' output: their
// ids and the session-keyed tags of redacted credentials.
var perSession = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|hmac-sha256=[0-9a-f]+`)

// TestExecDaemonMatchesInProcess runs the same commands through serve's
// socket and with --no-daemon: the output and the exit code are the same,
// and both sessions are recorded and verify.
func TestExecDaemonMatchesInProcess(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(ws, "app.conf"), []byte("user=admin\npassword=hunter2\n"), 0o644)
	env := cliEnv(t, "ECTO_SANDBOX_TIMEOUT_SECS", "1")
	defer startServe(t, env, ws)()
	if st, err := os.Stat(localsock.Path(env["ECTO_DATA_DIR"])); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", st, err)
	}
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"allowed", []string{"--", "echo hi; cat app.conf"}, 0},
		{"failing", []string{"--", "echo out; echo err >&2; exit 3"}, 3},
		{"denied", []string{"--", "sudo", "id"}, ExitExecDenied},
		{"timeout", []string{"--", "sleep 5"}, 128 + 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--workspace", ws}, c.args...)
			dCode, dOut, dErr := execDaemon(t, env, args...)
			pCode, pOut, pErr := runCLI(t, env, "", append([]string{"exec", "--no-daemon"}, args...)...)
			if c.name == "timeout" && dCode == 128+15 {
				c.code = dCode
			}
			if dCode != c.code || pCode != c.code {
				t.Fatalf("exit: daemon %d, in-process %d; want %d\ndaemon stderr %s\nin-process stderr %s", dCode, pCode, c.code, dErr, pErr)
			}
			if strings.Contains(dOut+dErr, "hunter2") {
				t.Fatalf("the daemon's output is not redacted: %q", dOut)
			}
			same := func(a, b string) bool {
				return perSession.ReplaceAllString(a, "X") == perSession.ReplaceAllString(b, "X")
			}
			if !same(dOut, pOut) || !same(dErr, pErr) {
				t.Fatalf("outputs differ:\ndaemon     %q %q\nin-process %q %q", dOut, dErr, pOut, pErr)
			}
			for _, id := range []string{sessionOf(t, dErr), sessionOf(t, pErr)} {
				if code, _, errOut := runCLI(t, env, "", "verify-session", id); code != 0 {
					t.Fatalf("verify-session %s: exit %d %s", id, code, errOut)
				}
			}
		})
	}
}

// TestExecDaemonRefusesOtherUID connects as another uid (the socket's
// modes loosened, so that only the SO_PEERCRED check stands in the way):
// the daemon refuses, and nothing runs.
func TestExecDaemonRefusesOtherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	env := cliEnv(t)
	defer startServe(t, env, t.TempDir())()
	sock := localsock.Path(env["ECTO_DATA_DIR"])
	for _, dir := range []string{filepath.Dir(env["ECTO_DATA_DIR"]), env["ECTO_DATA_DIR"], filepath.Dir(sock)} {
		os.Chmod(dir, 0o711)
	}
	os.Chmod(sock, 0o666)
	client := `import socket,struct,sys,json
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
b=json.dumps({"command":"touch /tmp/x","workspace":"/","justification":"try it"}).encode()
s.sendall(struct.pack(">I",len(b))+b)
n=struct.unpack(">I",s.recv(4))[0]; d=b""
while len(d)<n: d+=s.recv(n-len(d))
print(d.decode())`
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", client, sock).CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v %s", err, out)
	}
	if !strings.Contains(string(out), "refused this connection: peer uid 65534") || !strings.Contains(string(out), `"not_started":true`) {
		t.Fatalf("want a refusal; got %s", out)
	}
}

// TestExecDaemonFailsClosed: a daemon that takes the request and dies is
// exec's aborted exit, and the command is not run again in-process.
func TestExecDaemonFailsClosed(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	env := cliEnv(t)
	fakeDaemon(t, env, nil)
	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "touch marker")
	if code != ExitExecAborted || !strings.Contains(errOut, "failed mid-request") {
		t.Fatalf("exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "marker")); err == nil {
		t.Fatal("the command ran again in-process")
	}
}

// benchExec times `exec -- /bin/true`; daemon selects the socket.
func benchExec(b *testing.B, daemon bool) {
	ws := b.TempDir()
	env := map[string]string{"ECTO_DATA_DIR": b.TempDir(), "HOME": b.TempDir()}
	args := []string{"ironvise", "exec", "--workspace", ws, "--", "/bin/true"}
	if daemon {
		defer startServe(b, env, ws)()
	} else {
		args = append(args[:2], append([]string{"--no-daemon"}, args[2:]...)...)
	}
	b.ResetTimer()
	for b.Loop() {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errb, config.MapLookup(env)); code != 0 {
			b.Fatalf("exit %d: %s", code, errb.String())
		}
	}
}

func BenchmarkExecDaemon(b *testing.B)    { benchExec(b, true) }
func BenchmarkExecInProcess(b *testing.B) { benchExec(b, false) }

// TestExecDaemonHintsNameTheProgram: the hints in the output of an exec
// the daemon ran name the binary the client ran, as an in-process exec's
// do, not the word ironvise (here no ironvise is on PATH at all).
func TestExecDaemonHintsNameTheProgram(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	env := cliEnv(t)
	defer startServe(t, env, ws)()
	const prog = "/opt/other/ironvise"
	want := "(verify: " + prog + " verify-session "
	var out, errb bytes.Buffer
	a := &app{ctx: context.Background(), invoked: prog, stdin: strings.NewReader(""), stdout: &out, stderr: &errb, lookup: config.MapLookup(env)}
	o := execOptions{Command: "true", Workspace: ws, Justification: execclient.DefaultJustification}
	if handled, err := a.execViaDaemon(o, &resultOutput{}); !handled || err != nil || !strings.Contains(errb.String(), want) {
		t.Fatalf("through the daemon: handled %v, %v, stderr %q; want it to contain %q", handled, err, errb.String(), want)
	}
	errb.Reset()
	if code := run(context.Background(), []string{prog, "exec", "--no-daemon", "--workspace", ws, "--", "true"}, strings.NewReader(""), &out, &errb, config.MapLookup(env)); code != 0 || !strings.Contains(errb.String(), want) {
		t.Fatalf("in-process: exit %d, stderr %q; want it to contain %q", code, errb.String(), want)
	}
}
