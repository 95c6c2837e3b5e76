//go:build linux

package native

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// unixProbePy makes one socketpair inside the sandbox and then tries to
// reach host sockets with it. argv: MODE FAMILY TYPE ACTION [PATH...],
// where MODE is "raw:<socketpair syscall number>" (the registers exactly as
// given, upper bits included) or "py" (Python's socket.socketpair, which
// adds SOCK_CLOEXEC). It prints "OK PAIR" or "ERR <errno> <name>" for the
// socketpair, then one line per attempt.
const unixProbePy = `import sys, os, ctypes, errno, socket, array
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def say(*a): print(*a, flush=True)
def fail(e): say("ERR", e, errno.errorcode.get(e, "?"))
mode, family, typ, action, paths = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3], 0), sys.argv[4], sys.argv[5:]
try:
    if mode == "py":
        a, b = socket.socketpair(family, typ)
    else:
        fds = (ctypes.c_int * 2)()
        if libc.syscall(ctypes.c_long(int(mode[4:])), ctypes.c_ulong(family), ctypes.c_ulong(typ), ctypes.c_ulong(0), fds) == -1:
            e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
        a, b = socket.socket(fileno=fds[0]), socket.socket(fileno=fds[1])
except OSError as e:
    fail(e.errno); sys.exit(1)
say("OK PAIR")
if action == "echo":
    a.send(b"ping"); say("OK", b.recv(4).decode()); paths = []
for p in paths:
    try:
        if action == "sendto":
            a.sendto(b"escape via sendto", p)
        elif action == "rights":
            a.sendmsg([b"escape via SCM_RIGHTS"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [b.fileno(), os.open("/etc/passwd", os.O_RDONLY)]))], 0, p)
        elif action == "connect":
            a.connect(p)
        say("OK", action, p)
    except OSError as e:
        fail(e.errno)
`

// inheritedProbePy writes to a descriptor number it was given, as a
// command would use a host socket leaked to it.
const inheritedProbePy = `import sys, os, errno
try:
    os.write(int(sys.argv[1]), b"escape via an inherited descriptor"); print("OK SENT")
except OSError as e:
    print("ERR", e.errno, errno.errorcode.get(e.errno, "?"))
`

// hostDgram is a host daemon's AF_UNIX datagram socket, like /dev/log or
// journald's, that anyone may write to.
type hostDgram struct {
	path string
	conn *net.UnixConn
}

func listenDgram(t *testing.T, path string) *hostDgram {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Writable by everyone, so that only the sandbox can be what stops
	// a datagram (the unprivileged run included).
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	return &hostDgram{path: path, conn: c}
}

// nothingArrived fails if a datagram, with or without descriptors, reached
// the host socket. Any descriptor that did arrive is closed.
func (h *hostDgram) nothingArrived(t *testing.T) {
	t.Helper()
	buf, oob := make([]byte, 512), make([]byte, 512)
	for {
		h.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, oobn, _, _, err := h.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		fds := 0
		if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if rights, err := syscall.ParseUnixRights(&m); err == nil {
					for _, fd := range rights {
						syscall.Close(fd)
					}
					fds += len(rights)
				}
			}
		}
		t.Errorf("%q (%d descriptors attached) from the sandbox reached the host socket %s", buf[:n], fds, h.path)
	}
}

// TestUnixSocketpairEscape proves that a sandboxed command cannot deliver
// anything to a host AF_UNIX socket: neither to one in a directory Landlock
// hides from it nor to one it can see in the workspace, neither a datagram
// nor descriptors (SCM_RIGHTS), and neither through a socketpair of a type
// other than SOCK_STREAM nor through an addressed send or connect on a
// stream pair. The stream pair itself, with SOCK_NONBLOCK and
// SOCK_CLOEXEC, keeps working. It runs as the test's user (root in CI)
// and, as root, as nobody too.
func TestUnixSocketpairEscape(t *testing.T) {
	requireSandbox(t)
	requireTool(t, py3)
	pairNr := nr(t, "socketpair")
	raw := "raw:" + pairNr
	hex := func(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }
	const (
		stream    = syscall.SOCK_STREAM
		dgram     = syscall.SOCK_DGRAM
		seqpacket = syscall.SOCK_SEQPACKET
		flags     = syscall.SOCK_CLOEXEC | syscall.SOCK_NONBLOCK
		high      = 0xffffffff00000000 // the kernel reads the type as an int
	)
	cases := []struct {
		name    string
		mode    string
		typ     uint64
		action  string
		wantOut []string // lines the output must contain
	}{
		// The escape: a datagram pair needs no connect to reach any
		// pathname socket.
		{"datagram_sendto", raw, dgram, "sendto", []string{"ERR 1 EPERM"}},
		{"datagram_cloexec_nonblock_sendto", raw, dgram | flags, "sendto", []string{"ERR 1 EPERM"}},
		{"datagram_type_with_upper_bits_sendto", raw, high | dgram, "sendto", []string{"ERR 1 EPERM"}},
		{"python_socketpair_datagram_sendto", "py", dgram, "sendto", []string{"ERR 1 EPERM"}},
		{"datagram_scm_rights", raw, dgram, "rights", []string{"ERR 1 EPERM"}},
		{"seqpacket_sendto", raw, seqpacket, "sendto", []string{"ERR 1 EPERM"}},
		{"seqpacket_scm_rights", raw, seqpacket | flags, "rights", []string{"ERR 1 EPERM"}},
		// A stream pair works and cannot address anything else.
		{"stream_echo", raw, stream, "echo", []string{"OK PAIR", "OK ping"}},
		{"stream_cloexec_nonblock_echo", raw, stream | flags, "echo", []string{"OK PAIR", "OK ping"}},
		{"python_socketpair_stream_echo", "py", stream, "echo", []string{"OK PAIR", "OK ping"}},
		{"stream_sendto", raw, stream | flags, "sendto", []string{"OK PAIR", "ERR 106 EISCONN"}},
		{"stream_scm_rights", raw, stream, "rights", []string{"OK PAIR", "ERR 106 EISCONN"}},
		{"stream_connect", raw, stream, "connect", []string{"OK PAIR", "ERR 1 EPERM"}},
	}
	for _, opts := range userOptions(t) {
		t.Run(optsName(opts), func(t *testing.T) {
			tier := newTestTier(t, opts)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					fx := newFixture(t)
					writeFile(t, fx.ws, "unixprobe.py", unixProbePy)
					// One socket in a directory outside every sandbox
					// root, one in the (read-only) workspace.
					hidden := listenDgram(t, filepath.Join(fx.hostDir(t, "run"), "daemon.sock"))
					visible := listenDgram(t, filepath.Join(fx.ws, "log.sock"))
					cmd := strings.Join([]string{"python3", "unixprobe.py", tc.mode, strconv.Itoa(syscall.AF_UNIX), hex(tc.typ), tc.action, hidden.path, visible.path}, " ")
					r := run(t, tier, fx, cmd)
					if opts.User != "" && (r.Enforced.UID == nil || *r.Enforced.UID != 65534) {
						t.Fatalf("ran as uid %v; want 65534 (nobody)", r.Enforced.UID)
					}
					hidden.nothingArrived(t)
					visible.nothingArrived(t)
					for _, w := range tc.wantOut {
						if !strings.Contains(r.Stdout, w+"\n") {
							t.Errorf("output lacks %q", w)
						}
					}
					for _, line := range strings.Split(r.Stdout, "\n") {
						if strings.HasPrefix(line, "OK "+tc.action) {
							t.Errorf("the kernel let %q through", line)
						}
					}
					if t.Failed() || testing.Verbose() {
						t.Logf("%s\n%s", cmd, r.Observation())
					}
				})
			}
		})
	}
}

// TestInheritedHostSocketClosed: a host AF_UNIX datagram socket that
// IronVise leaked to its children by mistake (no close-on-exec), connected
// to a host daemon, is closed before the command runs; writing to its
// number fails with EBADF and nothing arrives.
func TestInheritedHostSocketClosed(t *testing.T) {
	requireSandbox(t)
	requireTool(t, py3)
	tier := newTestTier(t, sandbox.Options{})
	fx := newFixture(t)
	writeFile(t, fx.ws, "inherited.py", inheritedProbePy)
	daemon := listenDgram(t, filepath.Join(fx.hostDir(t, "run"), "daemon.sock"))
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM, 0) // no SOCK_CLOEXEC: the mistake
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: daemon.path}); err != nil {
		t.Fatal(err)
	}
	r := run(t, tier, fx, "python3 inherited.py "+strconv.Itoa(fd))
	daemon.nothingArrived(t)
	if !strings.Contains(r.Stdout, "ERR 9 EBADF") {
		t.Errorf("want EBADF for the inherited descriptor:\n%s", r.Observation())
	}
}
