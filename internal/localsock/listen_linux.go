package localsock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Handler runs one request. ctx ends when the server shuts down or the
// client hangs up.
type Handler func(ctx context.Context, req *Request) *Response

// Listener is the daemon's socket. Only connections from the uid the
// daemon runs as are served: the socket is 0600 in a 0700 directory, and
// the peer's uid is checked again with SO_PEERCRED, so that root or a
// loosened mode cannot hand a command to the daemon under another user's
// name. Root is not exempt: its command would run and be recorded as the
// daemon's user.
type Listener struct {
	ln   *net.UnixListener
	path string
	ino  uint64
	uid  int
	wg   sync.WaitGroup
}

// Listen creates $dataDir/run (0700) and listens on the socket in it
// (0600). A socket left by a crashed daemon is replaced; one that still
// answers, or a path that is not a socket, is an error.
func Listen(dataDir string) (*Listener, error) {
	dir := filepath.Dir(Path(dataDir))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("localsock: %w", err)
	}
	uid := os.Geteuid()
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("localsock: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !st.IsDir() || !ok || int(sys.Uid) != uid {
		return nil, fmt.Errorf("localsock: %s is not a directory owned by uid %d; refusing to listen in it", dir, uid)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("localsock: %w", err)
	}
	path := Path(dataDir)
	if err := replaceStale(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("localsock: listen on %s: %w", path, err)
	}
	// Close removes the socket itself, and only while it is still ours.
	ln.SetUnlinkOnClose(false)
	l := &Listener{ln: ln, path: path, uid: uid}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("localsock: %w", err)
	}
	if st, err := os.Lstat(path); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			l.ino = sys.Ino
		}
	}
	return l, nil
}

// replaceStale removes a socket file nothing listens on. A live socket is
// left alone: unlinking it would orphan the daemon that owns it.
func replaceStale(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("localsock: %w", err)
	}
	if st.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("localsock: %s exists and is not a socket; refusing to replace it", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("localsock: another ironvise serve answers on %s", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("localsock: cannot tell whether %s is stale: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("localsock: remove the stale socket: %w", err)
	}
	return nil
}

// Path is the socket's path.
func (l *Listener) Path() string { return l.path }

// Serve answers connections until Close, then waits for the requests in
// flight.
func (l *Listener) Serve(ctx context.Context, h Handler) {
	defer l.wg.Wait()
	for {
		conn, err := l.ln.AcceptUnix()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.serveConn(ctx, conn, h)
		}()
	}
}

func (l *Listener) serveConn(ctx context.Context, conn *net.UnixConn, h Handler) {
	defer conn.Close()
	if uid, err := peerUID(conn); err != nil || uid != l.uid {
		msg := fmt.Sprintf("the daemon at %s refused this connection: peer uid %d is not the uid serve runs as (%d); run exec as that user or with --no-daemon", l.path, uid, l.uid)
		if err != nil {
			msg = fmt.Sprintf("the daemon at %s refused this connection: cannot read the peer's credentials: %v", l.path, err)
		}
		_ = WriteMessage(conn, &Response{Code: 2, Error: msg, NotStarted: true})
		// The refused peer's request is never read as one; it is drained
		// (bounded in size and time) so the close does not race the
		// peer's write and cost it the answer above.
		_ = conn.CloseWrite()
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, _ = io.CopyN(io.Discard, conn, MaxRequest+4)
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var req Request
	if err := ReadMessage(conn, MaxRequest, &req); err != nil {
		_ = WriteMessage(conn, &Response{Code: 2, Error: "daemon: bad request: " + err.Error(), NotStarted: true})
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The client sends nothing more: a read that returns means it hung
	// up (Ctrl-C), and its command is stopped like an interrupted exec.
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		cancel()
	}()
	_ = WriteMessage(conn, h(rctx, &req))
}

// peerUID is the uid of the process at the other end of conn.
func peerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, cerr
	}
	return int(cred.Uid), nil
}

// Close stops accepting and removes the socket if it is still the one
// Listen created.
func (l *Listener) Close() error {
	err := l.ln.Close()
	if st, serr := os.Lstat(l.path); serr == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Ino == l.ino {
			_ = os.Remove(l.path)
		}
	}
	return err
}
