//go:build linux

package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
	"github.com/ironvise/ironvise/internal/timerslack"
)

// Securebits (linux/securebits.h) locked so that uid 0 never regains
// capabilities on exec, a uid switch does not touch the (already empty)
// sets, and nothing can raise ambient capabilities.
const (
	secbitNoRoot                 = 1 << 0
	secbitNoRootLocked           = 1 << 1
	secbitNoSetuidFixup          = 1 << 2
	secbitNoSetuidFixupLocked    = 1 << 3
	secbitKeepCapsLocked         = 1 << 5
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLockd = 1 << 7
	lockedSecurebits             = secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup |
		secbitNoSetuidFixupLocked | secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLockd
)

// launcher carries the state of one launch.
type launcher struct {
	spec    Spec
	applied Applied
	// shm says /dev/shm is a view of the scratch tmpfs.
	shm bool
	// keepBounding says the bounding set could not be dropped (container
	// mode without privilege, see dropPrivileges).
	keepBounding bool
	// pre is what a ready launcher did in its namespaces before its
	// specification came (NamespacesArg).
	pre prepared
	// start is the specification pipe, on which the parent's Start comes
	// (nil when the specification came as arguments).
	start *os.File
	// buf takes what the launcher reads once its specification came
	// (the specification itself, then verify's /proc files); a ready
	// launcher allocates and writes it before, see warm.
	buf []byte
	// lastCap answers cap_last_cap as a ready launcher read it before its
	// specification; nil otherwise.
	lastCap func() (int, error)
}

// readBufSize is the size of launcher.buf: the specification of a command
// on the development host takes about 8.5 KiB (most of it the protected
// paths), /proc/self/status under 2 KiB; a longer one is read into memory
// of its own.
const readBufSize = 32 << 10

// warm does, before the specification comes, what the launch after it
// would otherwise do on the way to the command: the Go heap grows a page
// at a time, and on a machine where a page fault costs tens of
// microseconds the fresh pages of the reads after the specification cost
// more than the reads (docs/operate/performance-log.md#exec-2026-12-04-morning).
// Writing buf maps its pages now; cap_last_cap is a constant of the
// running kernel.
func (l *launcher) warm() {
	l.buf = make([]byte, readBufSize)
	for i := 0; i < len(l.buf); i += os.Getpagesize() {
		l.buf[i] = 1
	}
	n, err := kernel.LastCap()
	l.lastCap = func() (int, error) { return n, err }
}

// capLast is cap_last_cap: as warm read it, or read now.
func (l *launcher) capLast() (int, error) {
	if l.lastCap != nil {
		return l.lastCap()
	}
	return kernel.LastCap()
}

// prepared records the namespace steps a ready launcher took before its
// specification: their errors are reported at their own steps, once the
// specification came, as if the steps had run then (and a step the
// specification injects a failure into still fails there).
type prepared struct {
	done            bool
	slave, loopback error
}

// prepareNamespaces takes the steps that no specification changes, in
// the fresh namespaces the parent made: the mount tree a slave of the
// host's, so that nothing mounted here propagates out, and loopback up.
func (l *launcher) prepareNamespaces() {
	l.pre = prepared{done: true, slave: makeSlave(), loopback: kernel.LoopbackUp()}
}

// hasCap reports whether the launcher holds capability c in its
// effective set.
func (l *launcher) hasCap(c int) bool {
	eff, _, _, err := kernel.Capabilities()
	return err == nil && eff&(1<<uint(c)) != 0
}

// call runs a kernel step, or returns the injected errno instead (test
// hook): either way the error takes the same path to the parent.
func (l *launcher) call(step string, f func() error) error {
	if e, ok := l.spec.Inject[step]; ok {
		if e == InjectSkip {
			return nil
		}
		return syscall.Errno(e)
	}
	return f()
}

func launcherMain(args []string) int {
	if len(args) == 3 && args[2] == ReaperArg {
		return reaperMain("/proc/self/exe")
	}
	// Credentials, no_new_privs and seccomp are per thread, and execve
	// takes the calling thread's: run the whole launch on one OS thread.
	// It is never unlocked; the thread becomes the command.
	runtime.LockOSThread()
	// A sampled allocation records its stack in memory the profiler maps
	// for itself; under the address-space cap that mapping fails and the
	// runtime aborts the launch. The launcher is never profiled.
	runtime.MemProfileRate = 0

	l := &launcher{}
	var spec Spec
	var err error
	if ready := len(args) == 2 || len(args) == 3 && args[2] == NamespacesArg; !ready {
		spec, err = ParseArgs(args[2:])
	} else {
		// A ready launcher: everything up to here (the exec, the Go
		// runtime, the packages' initialisation) and the preparation of
		// its namespaces ran before the command was known. It says so,
		// and the parent sends the specification when it has one.
		if len(args) == 3 {
			l.prepareNamespaces()
		}
		l.warm()
		if err := kernel.Write(StatusFD, []byte(Ready)); err != nil {
			return ExitFailed
		}
		spec, l.start, err = readSpec(l.buf)
	}
	if err != nil {
		return l.fail(&SetupError{Step: StepSpec, Message: "decode launch specification: " + err.Error()})
	}
	l.spec = spec
	// launch returns only on failure: on success the process has become
	// the command.
	err = l.launch()
	var se *SetupError
	if !errors.As(err, &se) {
		se = &SetupError{Step: "launch", Message: err.Error()}
	}
	return l.fail(se)
}

// readSpec reads the framed specification from SpecFD and returns the
// pipe, on which the parent's Start comes later (awaitStart).
func readSpec(buf []byte) (Spec, *os.File, error) {
	f := os.NewFile(SpecFD, "launch-spec")
	s, err := ReadFrame(f, buf)
	if err != nil {
		_ = f.Close()
		return Spec{}, nil, fmt.Errorf("read descriptor %d: %w", SpecFD, err)
	}
	return s, f, nil
}

// awaitStart waits for the parent's Start on the specification pipe, then
// closes the pipe: nothing of it reaches the command. Anything else — the
// pipe closed, a read error, another byte — ends the launch before the
// command runs.
func (l *launcher) awaitStart() error {
	if l.start == nil {
		return nil // the specification came as arguments: used at once
	}
	var b [1]byte
	n, err := l.start.Read(b[:])
	_ = l.start.Close()
	l.start = nil
	switch {
	case n == 1 && b[0] == Start:
		return nil
	case n == 1:
		err = fmt.Errorf("unexpected byte %#x", b[0])
	case err == nil:
		err = io.ErrUnexpectedEOF
	}
	return stepErr(StepStart, fmt.Errorf("the parent did not let the command start (%w); nothing of it ran", err), "")
}

// fail reports se to the parent and returns the launcher's exit code.
func (l *launcher) fail(se *SetupError) int {
	_ = kernel.Write(StatusFD, append(Status{Error: se}.Marshal(), '\n'))
	return ExitFailed
}

// stepErr builds the SetupError of a failed step.
func stepErr(step string, err error, fix string) error {
	se := &SetupError{Step: step, Message: err.Error(), Fix: fix}
	var e syscall.Errno
	if errors.As(err, &e) {
		se.Errno = int(e)
	}
	return se
}

// launch applies the sandbox in the order of
// docs/design/sandbox.md#linux-native-tier and execs the command. It returns
// only on failure.
func (l *launcher) launch() error {
	s := &l.spec

	// 1. Security: a descriptor inherited by accident (a database, the
	// ledger, a socket to the guard) must not reach the command. Marking
	// them close-on-exec keeps the Go runtime's own ones valid until exec;
	// the status pipe (fd 3) closes on exec too, which is how the parent
	// learns that exec succeeded.
	if err := l.call(StepFDs, func() error { return kernel.CloseRangeCloexec(StatusFD) }); err != nil {
		return stepErr(StepFDs, fmt.Errorf("close_range CLOEXEC: %w", err), "use Linux 5.11 or newer")
	}

	// 2. Security: a new session detaches from any controlling terminal, so
	// TIOCSTI has no terminal to inject keystrokes into; it also makes a new
	// process group for the parent to kill.
	if err := l.call(StepSetsid, kernel.Setsid); err != nil {
		return stepErr(StepSetsid, fmt.Errorf("setsid: %w", err), "")
	}
	// In container mode the launcher has no namespaces of its own: the
	// container's mount and network namespaces are the command's, and
	// the tier kept the protected paths out of its reach instead of
	// masking them.
	if s.Container && s.Overlay != nil {
		// Security: without a mount namespace of its own the overlay
		// would be mounted in the container's, for every process of
		// it; the tier refuses this combination first.
		return stepErr(StepOverlay, errors.New("overlay mode needs a mount namespace of the command's own, and container mode has none"),
			"unset ECTO_SANDBOX_WORKSPACE (a read-only workspace), or unset ECTO_SANDBOX_CONTAINER_MODE and allow the namespaces")
	}
	if s.Container && s.Proxy {
		// Security: the container's network is not the command's to
		// narrow; the tier refuses this combination before it starts a
		// launcher, and the launcher does not rely on it.
		return stepErr(StepProxy, errors.New("proxy mode needs a network namespace of the command's own, and container mode has none"),
			"set ECTO_SANDBOX_NETWORK=none, or unset ECTO_SANDBOX_CONTAINER_MODE and allow the namespaces")
	}
	if !s.Container {
		if err := l.namespaceSetup(); err != nil {
			return err
		}
	}
	if err := kernel.Chdir(s.Workspace); err != nil {
		return stepErr(StepMounts, fmt.Errorf("chdir %s: %w", s.Workspace, err), "check that the workspace exists and is a directory")
	}

	// 3. Privileges.
	if err := l.call(StepNNP, kernel.SetNoNewPrivs); err != nil {
		return stepErr(StepNNP, fmt.Errorf("prctl PR_SET_NO_NEW_PRIVS: %w", err), "use Linux 3.5 or newer")
	}
	if err := l.dropPrivileges(); err != nil {
		return err
	}

	// 4. Resource limits (the address-space cap is applied at exec), and
	// the command's timer slack.
	if err := l.applyRlimits(); err != nil {
		return err
	}
	if err := l.restoreTimerSlack(); err != nil {
		return err
	}

	// 5. Filesystem, network and IPC scoping.
	abi, err := l.applyLandlock()
	if err != nil {
		return err
	}
	l.applied.LandlockABI = abi

	// 6. System calls. The parent built the profile once; a program that
	// does not hash to what the parent recorded is never installed.
	prof, err := seccomp.FromBytes(s.Seccomp)
	if err == nil && prof.SHA256 != s.SeccompSHA256 {
		err = fmt.Errorf("seccomp program hash %s does not match the recorded %s", prof.SHA256, s.SeccompSHA256)
	}
	if err != nil {
		return stepErr(StepSeccomp, err, "")
	}
	if err := l.call(StepSeccomp, func() error { return kernel.SeccompInstall(prof.Filter) }); err != nil {
		return stepErr(StepSeccomp, fmt.Errorf("the kernel rejected the seccomp filter: seccomp(SET_MODE_FILTER, TSYNC): %w", err),
			"enable CONFIG_SECCOMP_FILTER in the kernel, or check that no other seccomp filter conflicts")
	}
	l.applied.SeccompSHA256 = prof.SHA256

	// 7. Security: trust, but verify. Every call above reported success;
	// the kernel's own view must now agree before anything untrusted runs.
	if err := l.verify(); err != nil {
		return err
	}

	// What the exec needs is prepared before the start, which usually
	// finds the launcher waiting (the commit of the intent is the longer
	// path); when the launcher is the longer one, this comes off the
	// time between the start and the command.
	plan, err := l.planExec()
	if err != nil {
		return err
	}

	// 8. Security: the command runs only once the parent says so — after
	// its intent is durable in the ledger. Everything above only confined
	// this process, which exits if the start never comes.
	if err := l.awaitStart(); err != nil {
		return err
	}

	// 9. Exec.
	return l.exec(plan)
}

// namespaceSetup builds the command's view in its own network and mount
// namespaces: loopback up, the mounts, the scratch tmpfs, the masks, a
// /proc of its PID namespace, pid_max and the read-only remount.
func (l *launcher) namespaceSetup() error {
	s := &l.spec
	// Security: the command's network namespace is its own (the parent
	// cloned it): /proc/net, interface ioctls and abstract Unix sockets
	// show nothing of the host's, and there is no route anywhere. Only
	// loopback exists, brought up so that tools binding 127.0.0.1 work.
	loopback, slave := kernel.LoopbackUp, makeSlave
	if l.pre.done {
		loopback = func() error { return l.pre.loopback }
		slave = func() error { return l.pre.slave }
	}
	if err := l.call(StepNetwork, loopback); err != nil {
		return stepErr(StepNetwork, fmt.Errorf("bring up loopback in the command's network namespace: %w", err), "run IronVise as root, or allow unprivileged user namespaces")
	}
	if s.Proxy {
		if err := l.call(StepProxy, listenProxy); err != nil {
			return stepErr(StepProxy, err, "report this with the output of `ironvise sandbox doctor`; set ECTO_SANDBOX_NETWORK=none to run commands without network")
		}
	}
	overlay := s.Overlay != nil
	if err := l.call(StepMounts, func() error { return setupMounts(slave, s.Workspace, s.Scratch, overlay) }); err != nil {
		return stepErr(StepMounts, err, "IronVise needs to create a mount namespace: run as root or enable unprivileged user namespaces")
	}
	// The overlay comes before every mask: a protected path inside the
	// workspace is then masked on the overlay, which is what the command
	// sees, and the layers' directories are masked after it resolved them.
	if overlay {
		if err := l.mountOverlay(); err != nil {
			return err
		}
	}
	if err := l.mountScratch(); err != nil {
		return err
	}
	if overlay {
		if err := l.maskOverlayDirs(); err != nil {
			return err
		}
	}
	if err := l.hide(); err != nil {
		return err
	}
	if err := l.call(StepMounts, mountProc); err != nil {
		fix := ""
		if s.UserNS {
			// In a user namespace the kernel refuses a fresh procfs
			// while paths of the current one are covered, as container
			// runtimes cover /proc/kcore and others.
			fix = ContainerFix
		}
		return stepErr(StepMounts, err, fix)
	}
	if err := l.setPidMax(); err != nil {
		return err
	}
	if err := l.call(StepMounts, func() error { return readOnlyRoot(s.Workspace, s.Scratch, l.shm, overlay) }); err != nil {
		return stepErr(StepMounts, err, "use Linux 5.12 or newer (mount_setattr)")
	}
	return nil
}

// listenProxy listens on 127.0.0.1:ProxyPort in the command's network
// namespace and hands the socket to the parent over ProxyFD, which serves
// the egress proxy on it from its own namespace: the proxy's dials leave
// from there, and the command's namespace keeps no route out.
//
// Security: the launcher closes its copy of the socket, and ProxyFD, before
// anything untrusted runs, so that no process of the command can accept
// on the proxy's port or reach the parent's end of ProxyFD; the port stays
// bound by the parent's copy (no SO_REUSEPORT), so that no process of the
// command can bind it either.
func listenProxy() error {
	defer unix.Close(ProxyFD)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for the egress proxy: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: ProxyPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("bind 127.0.0.1:%d for the egress proxy: %w", ProxyPort, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		return fmt.Errorf("listen on 127.0.0.1:%d: %w", ProxyPort, err)
	}
	if err := unix.Sendmsg(ProxyFD, []byte{'L'}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("hand the egress proxy's socket to IronVise (descriptor %d): %w", ProxyFD, err)
	}
	return nil
}

// dropPrivileges clears every capability set and switches user if asked.
func (l *launcher) dropPrivileges() error {
	s := &l.spec
	last, err := l.capLast()
	if err != nil {
		return stepErr(StepCaps, err, "mount /proc")
	}
	// Security: the bounding set caps what any later exec (a setuid or
	// file-capability binary) could regain; empty, root keeps only plain
	// file ownership.
	// In container mode a launcher that is not root and holds no
	// capability (IronVise run with --user) cannot change the bounding
	// set or the securebits, and needs neither: it has nothing to drop,
	// and no_new_privs (set above) keeps any exec from gaining a
	// capability. verify then skips the bounding set.
	l.keepBounding = s.Container && os.Geteuid() != 0 && !l.hasCap(unix.CAP_SETPCAP)
	if !l.keepBounding {
		if err := l.call(StepCaps, func() error { return kernel.DropBoundingSet(last) }); err != nil {
			return stepErr(StepCaps, fmt.Errorf("drop bounding set: %w", err), "")
		}
		// Security: uid 0 would otherwise get a full permitted set back
		// at execve; NOROOT (locked) stops that.
		if err := l.call(StepCaps, func() error { return kernel.SetSecurebits(lockedSecurebits) }); err != nil {
			return stepErr(StepCaps, fmt.Errorf("prctl PR_SET_SECUREBITS: %w", err), "")
		}
	}
	if s.SwitchUser {
		if err := l.call(StepUser, func() error { return kernel.SetUser(s.UID, s.GID, []int{}) }); err != nil {
			return stepErr(StepUser, err, "check ECTO_SANDBOX_USER")
		}
		// A credential change clears the parent-death signal; without it
		// a dying IronVise could leave the command running.
		if err := kernel.SetParentDeathSignal(syscall.SIGKILL); err != nil {
			return stepErr(StepUser, fmt.Errorf("prctl PR_SET_PDEATHSIG: %w", err), "")
		}
	}
	if err := l.call(StepCaps, kernel.ClearAmbient); err != nil {
		return stepErr(StepCaps, fmt.Errorf("clear ambient capabilities: %w", err), "use Linux 4.3 or newer")
	}
	if err := l.call(StepCaps, kernel.ClearCapabilities); err != nil {
		return stepErr(StepCaps, fmt.Errorf("capset: %w", err), "")
	}
	eff, prm, _, err := kernel.Capabilities()
	if err != nil {
		return stepErr(StepCaps, fmt.Errorf("capget: %w", err), "")
	}
	if eff != 0 || prm != 0 {
		return stepErr(StepCaps, fmt.Errorf("capabilities remain after dropping: effective %#x, permitted %#x", eff, prm), "")
	}
	nnp, err := kernel.NoNewPrivs()
	if err != nil || !nnp {
		return stepErr(StepNNP, fmt.Errorf("no_new_privs is not set after prctl: %w", err), "")
	}
	l.applied.CapEffective, l.applied.CapPermitted, l.applied.NoNewPrivs = eff, prm, nnp
	l.applied.UID = os.Getuid()
	return nil
}

// rlimit is one resource limit to apply.
type rlimit struct {
	name     string
	resource int
	cur, max uint64
}

// clamp lowers want to the inherited hard limit: limits are only ever set
// at or below what the parent had (docs/design/sandbox.md#linux-native-tier).
func clamp(resource int, cur, max uint64) (uint64, uint64, error) {
	_, hard, err := kernel.GetRlimit(resource)
	if err != nil {
		return 0, 0, err
	}
	if max > hard {
		max = hard
	}
	if cur > max {
		cur = max
	}
	return cur, max, nil
}

const mib = 1 << 20

// applyRlimits sets every limit but the address space.
func (l *launcher) applyRlimits() error {
	lim := l.spec.Limits
	cpu := uint64(lim.CPUSecs)
	list := []rlimit{
		// Soft limit: SIGXCPU, so the command is told why; one second
		// later the hard limit kills it even if it handles SIGXCPU.
		{"RLIMIT_CPU", unix.RLIMIT_CPU, cpu, cpu + 1},
		{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, uint64(lim.NoFile), uint64(lim.NoFile)},
		{"RLIMIT_NPROC", unix.RLIMIT_NPROC, uint64(lim.NProc), uint64(lim.NProc)},
		{"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, uint64(lim.FSizeMiB) * mib, uint64(lim.FSizeMiB) * mib},
		// Security: a core dump would write the process's memory (secrets
		// it read) to disk outside the sandbox's control.
		{"RLIMIT_CORE", unix.RLIMIT_CORE, 0, 0},
	}
	got := RLimits{}
	for _, r := range list {
		cur, max, err := clamp(r.resource, r.cur, r.max)
		if err == nil {
			err = l.call(StepRlimits, func() error { return kernel.SetRlimit(r.resource, cur, max) })
		}
		if err != nil {
			return stepErr(StepRlimits, fmt.Errorf("setrlimit %s: %w", r.name, err), "")
		}
		switch r.resource {
		case unix.RLIMIT_CPU:
			got.CPUSecs = int(cur)
		case unix.RLIMIT_NOFILE:
			got.NoFile = int(cur)
		case unix.RLIMIT_NPROC:
			got.NProc = int(cur)
		case unix.RLIMIT_FSIZE:
			got.FSizeMiB = int(cur / mib)
		}
	}
	l.applied.RLimits = got
	return nil
}

// restoreTimerSlack gives this thread, which becomes the command, the
// timer slack of the specification: the launcher was started with a
// coarse one (package timerslack), which the command must not inherit —
// its sleeps and timers end as promptly as they would without IronVise.
// Failing it fails the launch, as every other step does, rather than run
// the command with a slack it was not meant to have.
func (l *launcher) restoreTimerSlack() error {
	ns := l.spec.TimerSlackNS
	if ns == 0 {
		return nil
	}
	if err := l.call(StepRlimits, func() error { return timerslack.Set(ns) }); err != nil {
		return stepErr(StepRlimits, fmt.Errorf("prctl PR_SET_TIMERSLACK %d: %w", ns, err), "")
	}
	return nil
}

// setPidMax caps the number of processes of the PID namespace where the
// kernel namespaces pid_max (Linux 6.14+). RLIMIT_NPROC does not apply to
// uid 0, so for root this is the only process-count backstop.
func (l *launcher) setPidMax() error {
	if !PidMaxNamespaced() {
		return nil
	}
	// PIDs below 300 are not reused after the first wrap, so the
	// namespace gets 300 extra to keep NProc usable over time.
	v := l.spec.Limits.NProc + reservedPIDs + 1
	err := l.call(StepPidMax, func() error {
		return os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.Itoa(v)), 0)
	})
	if err != nil {
		return stepErr(StepPidMax, fmt.Errorf("set pid_max of the PID namespace: %w", err), "")
	}
	l.applied.PidMax = v
	return nil
}

// reservedPIDs is the kernel's RESERVED_PIDS.
const reservedPIDs = 300

// PidMaxNamespaced reports whether pid_max is per PID namespace (Linux
// 6.14+). On older kernels the sysctl is global: writing it would change the
// host's limit, so it is never touched there.
func PidMaxNamespaced() bool {
	rel, err := kernel.KernelRelease()
	if err != nil {
		return false
	}
	major, minor, ok := parseRelease(rel)
	return ok && (major > 6 || major == 6 && minor >= 14)
}

// parseRelease reads "6.18.44-fc" as 6, 18.
func parseRelease(rel string) (major, minor int, ok bool) {
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	end := 0
	for end < len(parts[1]) && parts[1][end] >= '0' && parts[1][end] <= '9' {
		end++
	}
	minor, err2 := strconv.Atoi(parts[1][:end])
	return major, minor, err1 == nil && err2 == nil
}

// execPlan is everything exec needs but the system calls: the execve
// arguments of the command's argument vector and of the shell, the
// address-space cap and the two applied records.
type execPlan struct {
	sh           *kernel.Execve
	direct       []*kernel.Execve
	asCur, asMax uint64
	// first is the record written before the first exec; shellRecord the
	// one written before the shell when a direct exec failed.
	first, shellRecord []byte
}

// planExec prepares the exec of the command: its argument vector directly
// when the spec carries one, otherwise (or when that exec fails) /bin/sh
// -c command.
func (l *launcher) planExec() (*execPlan, error) {
	s := &l.spec
	sh, err := kernel.PrepareExecve("/bin/sh", []string{"sh", "-c", s.Command}, s.Env)
	if err != nil {
		return nil, stepErr(StepExec, fmt.Errorf("prepare exec: %w", err), "remove NUL bytes from the command")
	}
	direct, err := prepareArgv(s.Argv, s.Env)
	if err != nil {
		return nil, stepErr(StepExec, fmt.Errorf("prepare exec: %w", err), "remove NUL bytes from the command")
	}
	as := uint64(s.Limits.MemMiB) * mib
	asCur, asMax, err := clamp(unix.RLIMIT_AS, as, as)
	if err != nil {
		return nil, stepErr(StepRlimits, fmt.Errorf("getrlimit RLIMIT_AS: %w", err), "")
	}
	l.applied.RLimits.ASMiB = int(asCur / mib)
	l.applied.Namespaces = []string{"mount", "pid", "net"}
	if s.Container {
		l.applied.Namespaces = nil
	}
	if s.UserNS {
		l.applied.Namespaces = append(l.applied.Namespaces, "user")
	}
	// Both records are encoded now: nothing may allocate under the
	// address-space cap.
	l.applied.Exec = ExecShell
	shellRecord := append(Status{Applied: &l.applied}.Marshal(), '\n')
	first := shellRecord
	if len(direct) > 0 {
		l.applied.Exec = ExecArgv
		first = append(Status{Applied: &l.applied}.Marshal(), '\n')
	}
	return &execPlan{sh: sh, direct: direct, asCur: asCur, asMax: asMax, first: first, shellRecord: shellRecord}, nil
}

// exec writes the applied record, applies the address-space cap and execs
// the command as p says.
func (l *launcher) exec(p *execPlan) error {
	s := &l.spec
	if err := kernel.Write(StatusFD, p.first); err != nil {
		return stepErr(StepExec, fmt.Errorf("write status: %w", err), "")
	}
	// An injected exec failure is reported before the cap: a race-detector
	// build of the tests runs out of address space under it while it
	// reports the error.
	if e, ok := s.Inject[StepExec]; ok {
		return stepErr(StepExec, fmt.Errorf("execve /bin/sh: %w", syscall.Errno(e)), "install a POSIX shell at /bin/sh")
	}
	// The address-space cap comes last: the Go runtime reserves large
	// virtual ranges and must not allocate under it, so from the cap to
	// execve only system calls run (kernel.CapThenExec; the arguments
	// and both records are prepared in planExec). When a direct exec
	// fails, the shell takes over: it reports a missing program (127), an
	// unexecutable one (126) or runs a script without #!, in its own
	// words, and the second record says so.
	// The cap itself is set in CapThenExec; l.call only says whether a
	// test injects a failure (reported here) or skips it.
	capped := false
	if err := l.call(StepRlimits, func() error { capped = true; return nil }); err != nil {
		return stepErr(StepRlimits, fmt.Errorf("setrlimit RLIMIT_AS: %w", err), "")
	}
	failed, errno := kernel.CapThenExec(capped, p.asCur, p.asMax, p.direct, StatusFD, p.shellRecord, p.sh)
	switch failed {
	case kernel.FailedCap:
		return stepErr(StepRlimits, fmt.Errorf("setrlimit RLIMIT_AS: %w", errno), "")
	case kernel.FailedRecord:
		return stepErr(StepExec, fmt.Errorf("write status: %w", errno), "")
	}
	return stepErr(StepExec, fmt.Errorf("execve /bin/sh: %w", errno), "install a POSIX shell at /bin/sh")
}

// prepareArgv prepares the execs a shell would try for argv: argv[0]
// itself when it names a path (contains a slash), otherwise argv[0] in
// each directory of the environment's PATH in order, an empty entry
// meaning the working directory. Without argv or PATH there is nothing to
// try and the shell runs the command.
func prepareArgv(argv, env []string) ([]*kernel.Execve, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, nil
	}
	var paths []string
	if strings.Contains(argv[0], "/") {
		paths = []string{argv[0]}
	} else {
		for _, e := range env {
			if v, ok := strings.CutPrefix(e, "PATH="); ok {
				for _, dir := range strings.Split(v, ":") {
					if dir == "" {
						paths = append(paths, argv[0])
					} else {
						paths = append(paths, strings.TrimSuffix(dir, "/")+"/"+argv[0])
					}
				}
			}
		}
	}
	var out []*kernel.Execve
	for _, p := range paths {
		x, err := kernel.PrepareExecve(p, argv, env)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}
