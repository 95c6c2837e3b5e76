//go:build linux

package native

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/mounts"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
)

// A launcher's start — the clone into fresh namespaces, the exec of the
// ironvise binary, the Go runtime and the packages' initialisation — costs
// more than everything it then does for its command, and none of it
// depends on the command. So the tier keeps one launcher ready: started
// before the command is known, blocked reading its specification
// (launch.SpecFD). A Run takes it, sends the specification and reads the
// status pipe exactly as with a launcher started for it; the next one is
// started in the background at once. A ready launcher serves one command
// only, and carries nothing of it until the specification arrives, so
// every check the launcher makes (the seccomp hash, the read-backs, the
// Applied record) is the same either way.
//
// The command's stdout and stderr are pipes made when the launcher starts
// (exec.Cmd copies them into the launcher's own Collectors), so that the
// command inherits them as its 1 and 2 with no descriptor passing: the
// launcher wrote nothing to them before it had its specification, and
// they belong to that one launcher.

// launcherKey is what a launcher's process was started with that the tier
// could change afterwards; a ready launcher whose key is not the tier's
// current one is stale and is discarded.
type launcherKey struct {
	executable string
	userNS     bool
	noNetNS    bool
	container  bool
	uid, gid   int // IronVise's, mapped into the user namespace
	// mounts is the digest of IronVise's mount table (mountsOK: it could
	// be read). Security: the launcher's mount namespace is a copy of
	// that table taken at its clone, and where mounts do not propagate
	// (a private root, as in most containers) a mount made or removed
	// since is not in the copy: the command would see files the host
	// has covered since, or miss a workspace mounted since. A launcher
	// started under another table, or when it could not be read, is
	// stale.
	mounts   [sha256.Size]byte
	mountsOK bool
}

// launcherKey is the tier's current key.
func (t *Tier) launcherKey() launcherKey {
	k := launcherKey{executable: t.executable, userNS: t.userNS, noNetNS: t.noNetNS, container: t.container, uid: os.Geteuid(), gid: os.Getegid()}
	k.mounts, k.mountsOK = mounts.Digest()
	return k
}

// launcher is one launcher process, ready or running its command.
type launcher struct {
	key    launcherKey
	cmd    *exec.Cmd
	spec   *os.File // write end of the specification pipe
	status *os.File // read end of the status pipe
	// proxy is the parent's end of the launcher's launch.ProxyFD socket:
	// a launcher in proxy mode sends the egress proxy's listening socket
	// on it.
	proxy *os.File
	// stdout and stderr are the command's captures.
	stdout, stderr sandbox.Collector
	// kill kills the process (exec.Cmd's Cancel: SIGKILL to PID 1 of the
	// namespace, which takes every process in it along).
	kill context.CancelFunc
	// exited is closed when Wait returned (the process is reaped and its
	// output copied); waitErr is what Wait returned.
	exited  chan struct{}
	waitErr error
}

// startLauncher starts a launcher that waits for its specification; it is
// ready once awaitReady returned. Its key's mount table is the one read
// just before and after the clone (k's may be older: a ready launcher is
// started when the previous command ended); a table that changed across
// the clone leaves the launcher without a usable key.
func startLauncher(k launcherKey) (*launcher, error) {
	k.mounts, k.mountsOK = mounts.Digest()
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, err
	}
	proxyP, proxyC, err := proxyPair()
	if err != nil {
		specR.Close()
		specW.Close()
		statusR.Close()
		statusW.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &launcher{key: k, spec: specW, status: statusR, proxy: proxyP, kill: cancel, exited: make(chan struct{})}
	cmd := exec.CommandContext(ctx, k.executable, launch.Arg)
	switch {
	case k.container:
		// The process started is the reaper; it starts the launcher.
		cmd.Args = append(cmd.Args, launch.ReaperArg)
	case !k.noNetNS:
		// Its mount and network namespaces are its own: it prepares
		// them before it is ready (launch.NamespacesArg).
		cmd.Args = append(cmd.Args, launch.NamespacesArg)
	}
	// The launcher changes to the workspace itself once its mounts are
	// in place; until then it needs no directory of the host's.
	cmd.Dir = "/"
	cmd.Env = launch.Env()
	cmd.ExtraFiles = []*os.File{statusW, specR, proxyC} // launch.StatusFD, launch.SpecFD, launch.ProxyFD
	cmd.Stdout, cmd.Stderr = &l.stdout, &l.stderr
	cmd.SysProcAttr = k.sysProcAttr()
	cmd.Cancel = func() error {
		if k.container {
			// The reaper kills every process of the command, then
			// reports and exits; WaitDelay's SIGKILL is the backstop.
			return cmd.Process.Signal(syscall.SIGTERM)
		}
		// The command is PID 1 of its namespace: killing it makes the
		// kernel kill every other process in the namespace.
		return cmd.Process.Signal(syscall.SIGKILL)
	}
	cmd.WaitDelay = 2 * time.Second
	if k.container {
		// The reaper's sweep of a large tree (a fork bomb's hundreds of
		// processes) can outlast 2 s; a SIGKILL before it ends would leave
		// what it has not reaped yet to the container's init, which may
		// not reap them (IronVise itself as PID 1). The sweep ends within
		// launch.ReapTimeout, whatever happens.
		cmd.WaitDelay = launch.ReapTimeout + 5*time.Second
	}
	err = cmd.Start()
	statusW.Close()
	specR.Close()
	// Security: the parent keeps no copy of the launcher's end, so that
	// the launcher's death (or its exec) ends a wait for the proxy's
	// socket instead of leaving it blocked.
	proxyC.Close()
	if err != nil {
		cancel()
		specW.Close()
		statusR.Close()
		proxyP.Close()
		return nil, err
	}
	if m, ok := mounts.Digest(); !ok || m != k.mounts {
		l.key.mountsOK = false
	}
	l.cmd = cmd
	go func() {
		l.waitErr = cmd.Wait()
		cancel()
		close(l.exited)
	}()
	return l, nil
}

// readyTimeout bounds the wait for a launcher's Ready: its exec and Go
// start-up take milliseconds.
const readyTimeout = 10 * time.Second

// awaitReady reads the launcher's Ready line: it has started and waits
// for its specification. Anything else (the launcher died, or is not one)
// fails.
func (l *launcher) awaitReady() error {
	if err := l.status.SetReadDeadline(time.Now().Add(readyTimeout)); err != nil {
		return err
	}
	buf := make([]byte, len(launch.Ready))
	_, err := io.ReadFull(l.status, buf)
	if err == nil && string(buf) != launch.Ready {
		err = fmt.Errorf("unexpected status %q", buf)
	}
	if err != nil {
		return fmt.Errorf("the launcher did not start: %w", err)
	}
	return l.status.SetReadDeadline(time.Time{})
}

// errExited is a ready launcher that died before it took a specification.
var errExited = errors.New("the ready launcher has exited")

// send gives the launcher its specification (launch.Frame) and keeps the
// pipe open for startCommand. An error means the launcher did not take it
// (it has exited).
func (l *launcher) send(spec []byte) error {
	select {
	case <-l.exited:
		l.spec.Close()
		return errExited
	default:
	}
	framed, err := launch.Frame(spec)
	if err == nil {
		_, err = l.spec.Write(framed)
	}
	if err != nil {
		l.spec.Close()
	}
	return err
}

// startCommand lets the launcher exec its command (launch.Start) and
// closes the pipe. An error means the launcher is gone: its status says
// why, and nothing ran.
func (l *launcher) startCommand() error {
	_, err := l.spec.Write([]byte{launch.Start})
	if cerr := l.spec.Close(); err == nil {
		err = cerr
	}
	return err
}

// discard kills the launcher and reaps it.
func (l *launcher) discard() {
	l.kill()
	<-l.exited
	l.spec.Close()
	l.status.Close()
	l.proxy.Close()
}

// sysProcAttr starts the launcher in its own PID, mount and network
// namespaces, and in a user namespace mapping only IronVise's own uid when
// IronVise is not root.
func (k launcherKey) sysProcAttr() *syscall.SysProcAttr {
	if k.container {
		// Container mode: no namespaces. If IronVise dies, the reaper
		// is told to kill the command's processes (SIGTERM); SIGKILL
		// would leave them to the container's init.
		return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	}
	a := &syscall.SysProcAttr{
		// Security: a network namespace of its own hides the host's
		// interfaces, routes, sockets (/proc/net) and abstract Unix
		// sockets from the command.
		Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWNET,
		// If IronVise dies, the launcher dies with it (and, once it is
		// the command, PID 1 of its namespace, takes every descendant
		// along).
		Pdeathsig: syscall.SIGKILL,
	}
	if k.userNS {
		a.Cloneflags |= unix.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: k.uid, HostID: k.uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: k.gid, HostID: k.gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
		// The command keeps IronVise's uid inside the namespace, so execve
		// would drop the namespace's capabilities; the launcher needs two
		// of them to build its mount view and to drop everything
		// afterwards, and does so before anything untrusted runs.
		// CAP_DAC_OVERRIDE is overlay mode's (Spec.Overlay): overlayfs
		// works in its work directory with the mounter's credentials,
		// through a directory it makes with mode 000, and refuses the
		// mount (EACCES) without it. In the namespace it covers only
		// the files of IronVise's own uid, the one uid mapped.
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN, unix.CAP_DAC_OVERRIDE}
	}
	if k.noNetNS {
		a.Cloneflags &^= unix.CLONE_NEWNET
	}
	return a
}

// spares holds the tier's ready launcher (at most one) and the launchers
// it is starting or discarding in the background.
type spares struct {
	mu    sync.Mutex
	ready *launcher
	// starting is closed when the launcher being started in the
	// background is ready or failed; nil when none is starting.
	starting chan struct{}
	closed   bool
	bg       sync.WaitGroup
}

// launch starts the launcher of one command, whose run ends with ctx, and
// sends it spec: the ready launcher when there is a current one that takes
// it, otherwise one started now. The caller reads its status, waits for
// l.exited and then calls keepReady: the next launcher starts once this
// one's command is over, not while it starts, when on a busy machine it
// would compete with it for the CPU. An error means no launcher could be
// started.
func (t *Tier) launch(ctx context.Context, spec []byte) (*launcher, error) {
	k := t.launcherKey()
	l := t.takeSpare(ctx, k)
	if l != nil {
		if l.send(spec) == nil {
			return l, nil
		}
		t.spares.retire(l)
	}
	l, err := startLauncher(k)
	if err == nil {
		err = l.handOver(ctx, spec)
	}
	if err != nil && t.embedded != nil && ctx.Err() == nil {
		// The embedded launcher passed its check when the tier was
		// built (a tier of one command skips the check: this start is
		// its check). Should it fail to start now, or end before it is
		// ready (so before it read the specification: nothing of the
		// command was looked at), the ironvise binary is the same
		// launcher and is always there (its key differs, so a spare of
		// either kind is only ever used as what it is).
		t.log.Warn("the embedded sandbox launcher did not start or ended before it was ready; this command's launcher starts as the ironvise binary", "err", err)
		if l != nil {
			l.discard()
		}
		k.executable = selfExe
		if l, err = startLauncher(k); err == nil {
			err = l.handOver(ctx, spec)
		}
	}
	if l == nil {
		return nil, err
	}
	// A failed hand-over left l killed: its status says why.
	return l, nil
}

// handOver gives l, a launcher just started, its specification and waits
// until it is ready (the specification waits in the pipe meanwhile), the
// run's end cutting the wait short. When it died before taking the
// specification, or is no launcher, it is killed and the error says so:
// no record confirms anything, and its outcome (exit status and stderr)
// says why.
func (l *launcher) handOver(ctx context.Context, spec []byte) error {
	stop := context.AfterFunc(ctx, l.kill)
	defer stop()
	err := l.send(spec)
	if err == nil {
		err = l.awaitReady()
	}
	if err != nil {
		l.kill()
	}
	return err
}

// takeSpare takes the ready launcher if it was started with k; a stale one
// is discarded. A launcher still starting is waited for (until ctx ends):
// it is ready within milliseconds, and a second one started beside it
// would compete with it for the CPU and arrive no sooner. That happens
// when a command comes right after the tier was built (a standalone exec
// prepares its command while the ledger commits the intent) or right
// after the previous command.
func (t *Tier) takeSpare(ctx context.Context, k launcherKey) *launcher {
	p := t.spares
	p.mu.Lock()
	for p.ready == nil && p.starting != nil {
		started := p.starting
		p.mu.Unlock()
		select {
		case <-started:
		case <-ctx.Done():
			return nil
		}
		p.mu.Lock()
	}
	l := p.ready
	p.ready = nil
	p.mu.Unlock()
	if l != nil && (l.key != k || !k.mountsOK) {
		p.retire(l)
		return nil
	}
	return l
}

// keepReady starts a launcher in the background unless one is ready or
// starting, the tier is closed, or this binary cannot be re-executed as
// a launcher. A failed start is not reported: the next Run starts its own
// launcher and reports why that failed.
func (t *Tier) keepReady(k launcherKey) {
	// A key without the mount table's digest never matches (takeSpare):
	// a launcher started under it would only be discarded.
	if t.seccompErr != nil || (t.embedded == nil && !launch.Dispatches()) || !k.mountsOK {
		return
	}
	p := t.spares
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.ready != nil || p.starting != nil {
		return
	}
	started := make(chan struct{})
	p.starting = started
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		l, err := startLauncher(k)
		if err == nil {
			if err = l.awaitReady(); err != nil {
				l.discard()
			}
		}
		p.mu.Lock()
		p.starting = nil
		close(started)
		if err == nil && !p.closed {
			p.ready, l = l, nil
		}
		p.mu.Unlock()
		if l != nil {
			l.discard()
		}
	}()
}

// retire discards l in the background (synchronously once the tier is
// closed, so that Close reaps it).
func (p *spares) retire(l *launcher) {
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.bg.Add(1)
	}
	p.mu.Unlock()
	if closed {
		l.discard()
		return
	}
	go func() {
		defer p.bg.Done()
		l.discard()
	}()
}

// Close kills and reaps the tier's ready launcher and any it is starting;
// commands already running are not affected, and later Runs start their
// own launchers. A tier that is not closed loses its ready launcher when
// it is garbage collected or IronVise exits (the launcher's parent-death
// signal).
func (t *Tier) Close() error {
	t.spares.close()
	t.mountPoint.close()
	if t.hiddenCache != nil {
		t.hiddenCache.close()
	}
	return nil
}

func (p *spares) close() {
	p.mu.Lock()
	p.closed = true
	l := p.ready
	p.ready = nil
	p.mu.Unlock()
	if l != nil {
		l.discard()
	}
	p.bg.Wait()
}
