//go:build linux

package native

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
)

// probePy is a helper the tests run inside the sandbox with python3 to make
// system calls a shell cannot (sockets, ptrace, raw syscalls). Every
// subcommand prints "OK …" when the kernel let it through and
// "ERR <errno> <name>" when it refused.
const probePy = `import sys, os, ctypes, errno, socket, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def err(e):
    print("ERR", e, errno.errorcode.get(e, "?")); sys.exit(1)
def sc(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(a) for a in args])
    if r == -1:
        err(ctypes.get_errno())
    print("OK", r)
cmd, a = sys.argv[1], sys.argv[2:]
try:
    if cmd == "syscall":
        sc(*[int(x, 0) for x in a])
    elif cmd == "tcp":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.settimeout(2)
        s.connect((a[0], int(a[1]))); print("OK CONNECTED")
    elif cmd == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", (a[0], int(a[1]))); print("OK SENT")
    elif cmd == "listen":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.bind(("127.0.0.1", int(a[0]))); s.listen(1); print("OK LISTENING"); time.sleep(1)
    elif cmd == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(2)
        s.connect(a[0].replace("@", "\0", 1) if a[0].startswith("@") else a[0]); print("OK CONNECTED")
    elif cmd == "socketpair":
        x, y = socket.socketpair(); x.send(b"ping"); print("OK", y.recv(4).decode())
    elif cmd == "ptrace":
        pid = os.fork()
        if pid == 0:
            time.sleep(5); os._exit(0)
        r = libc.syscall(ctypes.c_long(int(a[0])), ctypes.c_long(16), ctypes.c_long(pid), None, None)
        e = ctypes.get_errno(); os.kill(pid, 9)
        print("OK ATTACHED") if r == 0 else err(e)
    elif cmd == "tiocsti":
        c = ctypes.c_char(b"x")
        sc(int(a[0]), 0, int(a[1], 0), ctypes.addressof(c))
    elif cmd == "memfd_exec":
        fd = os.memfd_create("x", 0)
        os.write(fd, open("/bin/echo", "rb").read())
        os.execv("/proc/self/fd/%d" % fd, ["echo", "EXEC-OK"])
    elif cmd == "fds":
        fs = []
        try:
            while len(fs) < 100000:
                fs.append(open("/dev/null"))
        except OSError as e:
            print("OK", len(fs), errno.errorcode.get(e.errno)); sys.exit(0)
        print("OK", len(fs), "unlimited")
    elif cmd == "memhog":
        b = bytearray(int(a[0]) << 20); print("OK ALLOCATED", len(b))
    elif cmd == "readfd":
        print("OK", os.read(int(a[0]), 100).decode(errors="replace"))
    elif cmd == "kill":
        os.kill(int(a[0]), int(a[1])); print("OK KILLED")
    else:
        print("unknown", cmd); sys.exit(2)
except OSError as e:
    err(e.errno)
except MemoryError:
    print("ERR MemoryError"); sys.exit(1)
`

// fixture is a host tree for one test: a workspace, a world-writable
// directory outside it, secrets outside every sandbox root, and listeners.
// Everything is readable by everyone so that a denial can only come from
// the sandbox, not from file permissions.
type fixture struct {
	base, ws, out, home string
	secret, secretText  string
	victim, victimText  string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	base, err := os.MkdirTemp("", "ironvise-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	fx := &fixture{base: base, ws: filepath.Join(base, "ws"), out: filepath.Join(base, "out"), home: filepath.Join(base, "home")}
	fx.secretText = "secret-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	fx.secret = filepath.Join(base, "secret.txt")
	fx.victim = filepath.Join(fx.out, "victim.txt")
	fx.victimText = "original victim content\n"
	mk := func(dir string, mode os.FileMode) {
		if err := os.MkdirAll(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	mk(base, 0o755)
	mk(fx.ws, 0o755)
	mk(filepath.Join(fx.ws, "src"), 0o755)
	mk(fx.out, 0o777)
	mk(filepath.Join(fx.home, ".ssh"), 0o755)
	write(filepath.Join(fx.ws, "README"), "line one\nline two needle\nline three\n", 0o644)
	write(filepath.Join(fx.ws, "src", "main.txt"), "alpha 1\nbeta 2\nneedle 3\n", 0o644)
	write(filepath.Join(fx.ws, "probe.py"), probePy, 0o644)
	write(fx.secret, fx.secretText+"\n", 0o644)
	write(fx.victim, fx.victimText, 0o666)
	write(filepath.Join(fx.home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n"+fx.secretText+"\n", 0o644)
	return fx
}

// writeFile writes a file of the test's into the workspace (or below base)
// before the command runs; name is relative to dir.
func writeFile(t testing.TB, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostDir makes a directory below base, outside every sandbox root.
func (fx *fixture) hostDir(t testing.TB, name string) string {
	t.Helper()
	d := filepath.Join(fx.base, name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// py returns a shell command running the probe helper.
func (fx *fixture) py(args ...string) string {
	return "python3 " + filepath.Join(fx.ws, "probe.py") + " " + strings.Join(args, " ")
}

// nr returns the number of a syscall on this architecture.
func nr(t testing.TB, name string) string {
	n, ok := seccomp.SyscallNumber(name)
	if !ok {
		t.Skipf("no syscall %s on this architecture", name)
	}
	return strconv.Itoa(int(n))
}

// requireSandbox skips when this host cannot run the native tier at all
// (no Landlock, or not root and no user namespaces). CI runs as root on a
// kernel with Landlock, where nothing is skipped.
func requireSandbox(t testing.TB) {
	t.Helper()
	if v, err := kernel.LandlockABI(); err != nil || v < 1 {
		t.Skipf("Landlock unavailable (%v): the native tier cannot run here", err)
	}
}

// requireTool skips when a program the case needs is not installed.
func requireTool(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s is not installed (.ci/run installs it)", path)
	}
}

func newTestTier(t testing.TB, opts sandbox.Options) *Tier {
	t.Helper()
	requireSandbox(t)
	tier, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	// Close kills and reaps the tier's ready launcher.
	t.Cleanup(func() { tier.(*Tier).Close() })
	return tier.(*Tier)
}

// run runs cmd in fx's workspace and fails the test if the sandbox did not
// apply (status aborted).
func run(t testing.TB, tier sandbox.Tier, fx *fixture, cmd string, mod ...func(*sandbox.Request)) sandbox.Result {
	t.Helper()
	req := sandbox.Request{Command: cmd, Workspace: fx.ws, Timeout: 60 * time.Second}
	for _, m := range mod {
		m(&req)
	}
	r := tier.Run(context.Background(), req)
	if r.Status == sandbox.StatusAborted {
		t.Fatalf("sandbox aborted: %s", r.Reason)
	}
	if r.Enforced == nil || r.Enforced.LandlockABI == nil || r.Enforced.SeccompProfileSHA256 == "" {
		t.Fatalf("no enforcement recorded: %+v", r.Enforced)
	}
	return r
}

// scratchLeftNothing fails unless nothing of r's scratch space is left on
// the host: a one-command tier's directory is gone, and a long-lived
// tier's shared mount point is there and empty.
func scratchLeftNothing(t testing.TB, tier *Tier, r sandbox.Result) {
	t.Helper()
	if r.Enforced.Scratch.Cleanup != sandbox.ScratchRemoved {
		t.Fatalf("cleanup: %s", r.Enforced.Scratch.Cleanup)
	}
	if tier.opts.OneCommand || tier.container {
		absent(t, r.Enforced.ScratchDir)
		return
	}
	if empty, err := emptyDir(r.Enforced.ScratchDir); err != nil || !empty {
		t.Fatalf("the shared scratch mount point %s: empty %v, %v", r.Enforced.ScratchDir, empty, err)
	}
}

// unchanged fails if the file's content is not want.
func unchanged(t testing.TB, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (the sandbox removed or moved it)", path, err)
	}
	if string(b) != want {
		t.Fatalf("%s changed: %q; want %q", path, b, want)
	}
}

// absent fails if path exists.
func absent(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Fatalf("%s exists: the sandbox wrote outside its scratch directory", path)
	}
}

// noLeak fails if s appears in the command's output.
func noLeak(t testing.TB, r sandbox.Result, s string) {
	t.Helper()
	if strings.Contains(r.Stdout+r.Stderr, s) {
		t.Fatalf("secret %q leaked into the output:\n%s", s, r.Observation())
	}
}

// contains fails unless the output contains s.
func contains(t testing.TB, r sandbox.Result, s string) {
	t.Helper()
	if !strings.Contains(r.Stdout+r.Stderr, s) {
		t.Fatalf("output lacks %q:\n%s", s, r.Observation())
	}
}

// exitZero fails unless the command exited 0.
func exitZero(t testing.TB, r sandbox.Result) {
	t.Helper()
	if r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("command failed: %s", r.Observation())
	}
}

// survivors returns host pids whose command line contains marker.
func survivors(marker string) []int {
	pids, _ := sandbox.ProcessesMatching(context.Background(), marker)
	return pids
}

// hostSleeper starts an unrelated host process for the signal tests.
func hostSleeper(t testing.TB) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}
