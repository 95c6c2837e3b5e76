//go:build linux

package native

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/mounts"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
	"github.com/ironvise/ironvise/internal/sandbox/native/launcherbin"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/timerslack"
)

// Tier is the native Linux tier.
type Tier struct {
	opts sandbox.Options
	log  *slog.Logger
	// executable is what each launcher is started from: the ironvise
	// binary (/proc/self/exe), or the launcher embedded in it
	// (launcherbin).
	executable string
	// embedded is the embedded launcher in use; nil: the ironvise binary.
	embedded *launcherbin.Executable
	// embeddedErr is why a build that embeds a launcher does not use it.
	embeddedErr string
	scratchDir  string // parent of the per-command scratch directories
	userNS      bool   // IronVise lacks CAP_SYS_ADMIN: a user namespace is needed
	// container is container mode (sandbox.Options.ContainerMode): no
	// namespaces, the launcher under a reaper (launch.ReaperArg).
	container  bool
	switchUser bool
	uid, gid   int    // the command's user when switchUser
	userName   string // USER and LOGNAME of the command, if known
	path       string // PATH of the commands: sandbox.CommandPath at construction
	seccomp    *seccomp.Profile
	seccompErr error
	// proxySeccomp builds, on its first call, the profile of proxy-mode
	// commands (seccomp.BuildProxy): most processes never run one, and
	// building it cost each 0.16 ms. Container mode refuses them, and
	// its proxySeccomp says so.
	proxySeccomp func() (*seccomp.Profile, error)
	// hidden are the paths every command's mount namespace masks:
	// Options.Hidden with its symlinks' targets as the tier was built.
	// Each command adds their targets as they are when it starts
	// (sandbox.HiddenPaths, or hiddenCache's kept answer while nothing it
	// read changed), so a link re-pointed since leaves both targets
	// masked.
	hidden []string
	// readRoots are the system roots a command can read; only protected
	// paths under them or the workspace need a mask.
	readRoots []string
	inject    map[string]int
	// noNetNS leaves the launcher in IronVise's network namespace: a test
	// hook proving that the launcher's verification catches it.
	noNetNS bool
	// shellOnly runs every command under /bin/sh -c: a test hook that
	// compares argv mode with the shell.
	shellOnly bool
	// timerSlack is the timer slack each command gets (0: the one its
	// launcher has): serve's launchers inherit its coarse one (package
	// timerslack), which the command does not keep.
	timerSlack uint64
	// mountPoint is the host directory a long-lived tier mounts every
	// command's scratch tmpfs on (newScratch).
	mountPoint sharedMountPoint
	// spares is the launcher kept ready for the next command
	// (spare_linux.go). Nothing it starts refers to the tier, so that an
	// unreachable tier's cleanup can close it.
	spares *spares
	// hiddenCache keeps hidden's real locations between commands
	// (hiddencache_linux.go); nil for a tier of one command.
	hiddenCache *hiddenCache
}

// New returns the native Linux tier. It fails only on configuration the
// tier cannot act on (an unknown ECTO_SANDBOX_USER, or one given while
// IronVise cannot switch users); whether the kernel can apply the tier is
// reported by Available, SelfTest and each Run.
func New(opts sandbox.Options) (sandbox.Tier, error) {
	opts = opts.WithDefaults()
	t := &Tier{opts: opts, log: opts.Logger, executable: selfExe, scratchDir: os.TempDir(),
		container: opts.ContainerMode, path: sandbox.CommandPath()}
	t.userNS = !t.container && needsUserNS()
	slack, set, err := timerslack.ForCommands()
	if err != nil {
		return nil, fmt.Errorf("native: %w", err)
	}
	if set {
		t.timerSlack = slack
	}
	t.useEmbedded()
	if opts.User != "" {
		switch {
		case os.Geteuid() != 0:
			return nil, fmt.Errorf("native: ECTO_SANDBOX_USER=%q: switching user needs IronVise to run as root; unset it or run as root", opts.User)
		case t.userNS:
			// The user namespace maps IronVise's uid alone: no other
			// user exists in it to switch to.
			return nil, fmt.Errorf("native: ECTO_SANDBOX_USER=%q: switching user needs CAP_SYS_ADMIN, and IronVise runs as root without it (in a container), so the sandbox uses a user namespace that maps root alone; unset ECTO_SANDBOX_USER, or set ECTO_SANDBOX_CONTAINER_MODE=true (the launcher then switches user in the container's own user namespace)", opts.User)
		}
		u, err := lookupUser(opts.User)
		if err != nil {
			return nil, fmt.Errorf("native: ECTO_SANDBOX_USER=%q: %w", opts.User, err)
		}
		t.switchUser, t.uid, t.gid = true, u.uid, u.gid
	}
	uid := os.Geteuid()
	if t.switchUser {
		uid = t.uid
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		t.userName = u.Username
	}
	// Built once: every launcher installs these bytes (and checks their
	// hash). A build failure is reported by Available and aborts each Run.
	t.seccomp, t.seccompErr = seccomp.Build()
	if t.container {
		// Security: container mode has no PID namespace; the reaper
		// kills the command's process group at once, so the command
		// cannot leave it (seccomp.GroupDenied). It has no read-only
		// mounts either, and a command running as IronVise's own uid
		// (root, usually) owns the files outside its reach: it gets no
		// call that changes a file's mode, owner or extended
		// attributes. A command switched to a user of its own
		// (ECTO_SANDBOX_USER) owns nothing outside its scratch
		// directory, and keeps them.
		t.seccomp, t.seccompErr = seccomp.BuildContainer(!t.switchUser)
	}
	if t.container {
		t.proxySeccomp = func() (*seccomp.Profile, error) {
			return nil, errors.New("container mode runs no proxy-mode command")
		}
	} else {
		t.proxySeccomp = sync.OnceValues(seccomp.BuildProxy)
	}
	// The first launcher starts now, while the caller gets on with its
	// own start-up (a standalone exec loads its rules and opens the
	// ledger): it needs only the launcher's key and the profile's
	// build having worked.
	t.spares = &spares{}
	runtime.AddCleanup(t, (*spares).close, t.spares)
	t.keepReady(t.launcherKey())
	// The real locations the list's links have now: they stay masked
	// after a link is re-pointed (each command adds the new ones).
	if opts.HiddenResolved {
		t.hidden = slices.Clone(opts.Hidden)
	} else {
		t.hidden = sandbox.HiddenPaths(opts.Hidden)
	}
	// The roots as written and resolved (/bin is often /usr/bin), so that
	// a protected path under either name is found.
	for _, r := range launch.SystemReadRoots() {
		t.readRoots = append(t.readRoots, r)
		if real, err := filepath.EvalSymlinks(r); err == nil && real != r {
			t.readRoots = append(t.readRoots, real)
		}
	}
	if !opts.OneCommand {
		t.hiddenCache = newHiddenCache()
		runtime.AddCleanup(t, (*hiddenCache).close, t.hiddenCache)
	}
	return t, nil
}

// selfExe starts a launcher as the running ironvise binary.
const selfExe = "/proc/self/exe"

// useEmbedded starts launchers from the launcher embedded in this binary
// when the build put one there (package launcherbin): a program of 2 MB
// starts in a fraction of the ironvise binary's time. One that cannot be
// used leaves the tier on the ironvise binary, which works everywhere:
// a tier of many commands warns, a tier of one command (which does not
// run the launcher once first, launcherbin.Embedded) logs it at debug
// level, since it is only slower, on every run, and the doctor says which
// launcher a tier uses and why.
func (t *Tier) useEmbedded() {
	e, err := launcherbin.Embedded(!t.opts.OneCommand)
	switch {
	case err == nil:
		t.executable, t.embedded = e.Path, e
		return
	case errors.Is(err, launcherbin.ErrNotEmbedded):
		return
	}
	t.embeddedErr = err.Error()
	if t.opts.OneCommand {
		t.log.Debug("the sandbox launcher embedded in this binary cannot be used; the launcher starts as the whole ironvise binary instead", "err", err)
		return
	}
	t.log.Warn("the sandbox launcher embedded in this binary cannot be used; each launcher starts as the whole ironvise binary instead, which is slower", "err", err)
}

// Launcher implements sandbox.LauncherDescriber.
func (t *Tier) Launcher() string {
	if e := t.embedded; e != nil {
		return fmt.Sprintf("the launcher program embedded in this binary (%d bytes, sha256 %s), run from a sealed memory file", e.Size, e.SHA256)
	}
	if !launcherbin.Embeds() {
		return "this binary, re-executed (it embeds no launcher program; make build embeds one)"
	}
	return "this binary, re-executed (the embedded launcher cannot be used here: " + t.embeddedErr + ")"
}

// needsUserNS reports whether the launcher needs a user namespace to create
// its PID, mount and network namespaces: IronVise lacks CAP_SYS_ADMIN in
// its effective set. Root in a container usually does (podman's and
// docker's default capability sets leave it out), and is then as
// unprivileged as any user for this purpose. Where the set cannot be read,
// only root is assumed to hold it.
func needsUserNS() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		if eff, ok := capEff(string(b)); ok {
			return eff&(1<<capSysAdmin) == 0
		}
	}
	return os.Geteuid() != 0
}

// capSysAdmin is CAP_SYS_ADMIN's bit (linux/capability.h).
const capSysAdmin = 21

// capEff parses the CapEff line of /proc/<pid>/status.
func capEff(status string) (uint64, bool) {
	for line := range strings.SplitSeq(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n, err == nil
		}
	}
	return 0, false
}

type userIDs struct{ uid, gid int }

// lookupUser resolves a user name or numeric uid.
func lookupUser(name string) (userIDs, error) {
	var u *user.User
	var err error
	if _, nerr := strconv.Atoi(name); nerr == nil {
		u, err = user.LookupId(name)
	} else {
		u, err = user.Lookup(name)
	}
	if err != nil {
		return userIDs{}, fmt.Errorf("look up user: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return userIDs{}, fmt.Errorf("user %q has a non-numeric uid or gid", name)
	}
	if uid == 0 {
		return userIDs{}, errors.New("user is root; name an unprivileged user")
	}
	return userIDs{uid, gid}, nil
}

// Name implements sandbox.Tier.
func (t *Tier) Name() sandbox.TierName { return sandbox.TierNativeLinux }

// Available implements sandbox.Tier: Landlock, seccomp and the namespaces
// the tier needs. It runs no command; SelfTest does.
func (t *Tier) Available(context.Context) error {
	unavailable := func(reason, fix string, err error) error {
		return &sandbox.UnavailableError{Tier: sandbox.TierNativeLinux, Reason: reason, Fix: fix, Err: err}
	}
	abi, err := launch.LandlockABI()
	if err != nil || abi < 1 {
		return unavailable("Landlock is not supported by this kernel or not enabled at boot", launch.LandlockFix, err)
	}
	if t.container && abi < launch.ContainerModeLandlockABI {
		return unavailable(fmt.Sprintf("container mode (ECTO_SANDBOX_CONTAINER_MODE=true) needs Landlock ABI %d or newer for the scoping of signals and abstract Unix sockets; this kernel has ABI %d", launch.ContainerModeLandlockABI, abi),
			"use Linux 6.12 or newer, or unset ECTO_SANDBOX_CONTAINER_MODE and run IronVise where it can create namespaces", err)
	}
	if t.seccompErr != nil {
		return unavailable("no seccomp profile for this architecture", "use linux/amd64 or linux/arm64, or set ECTO_DOCKER_IMAGE", t.seccompErr)
	}
	if !seccompEnabled() {
		return unavailable("seccomp filtering is not enabled in this kernel", "use a kernel built with CONFIG_SECCOMP_FILTER=y", nil)
	}
	if t.userNS {
		if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
			return unavailable("IronVise lacks CAP_SYS_ADMIN and user namespaces are disabled (user.max_user_namespaces=0)",
				"run IronVise as root, or allow user namespaces: sysctl -w user.max_user_namespaces=15000; "+launch.ContainerFix, nil)
		}
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		return unavailable("/bin/sh is missing", "install a POSIX shell at /bin/sh", err)
	}
	return nil
}

// seccompEnabled reports whether the kernel has seccomp filter mode.
func seccompEnabled() bool {
	b, err := os.ReadFile("/proc/self/status")
	return err == nil && bytes.Contains(b, []byte("\nSeccomp:"))
}

// SelfTest implements sandbox.Tier: it runs `echo` through the tier and
// checks that the sandbox was applied and that the workspace is read-only.
func (t *Tier) SelfTest(ctx context.Context) error {
	return sandbox.SelfTest(ctx, t)
}

// Run implements sandbox.Tier: Prepare, then Start at once.
func (t *Tier) Run(ctx context.Context, req sandbox.Request) sandbox.Result {
	return t.Prepare(ctx, req).Start()
}

// Prepare implements sandbox.Preparer: it confines req's command in a
// launcher that waits for Start. Each step up to the launcher's start
// fails closed, in this order: the request, the seccomp profile, the
// workspace and the protected paths, the scratch directory, the launch
// specification; such a failure is the aborted Result that Start returns.
// ctx is the run's: its end kills the launcher, held or running.
func (t *Tier) Prepare(ctx context.Context, req sandbox.Request) sandbox.Prepared {
	attempt, err := sandbox.Begin(sandbox.TierNativeLinux, req)
	p := &prepared{t: t, ctx: ctx, req: req, attempt: attempt}
	abort := func(format string, args ...any) sandbox.Prepared {
		r := attempt.Abort(format, args...)
		p.result = &r
		if p.scratch != nil {
			p.scratch.remove()
		}
		return p
	}
	if err != nil {
		return abort("%v", err)
	}
	if t.seccompErr != nil {
		return abort("build the seccomp profile: %v; fix: use linux/amd64 or linux/arm64, or set ECTO_DOCKER_IMAGE", t.seccompErr)
	}
	p.proxy = req.Egress != nil
	if p.proxy && t.container {
		// Security: fail closed. The command would reach the
		// container's network directly, around the proxy.
		return abort("%s", containerProxyRefused)
	}
	if req.Overlay != nil && t.container {
		// Security: fail closed; the command never runs on the real
		// workspace instead.
		return abort("%s", containerOverlayRefused)
	}
	if p.proxy {
		if _, err := t.proxySeccomp(); err != nil {
			return abort("build the proxy-mode seccomp profile: %v; fix: use linux/amd64 or linux/arm64, or set ECTO_SANDBOX_NETWORK=none", err)
		}
	}
	ws, err := sandbox.ResolveWorkspace(req.Workspace)
	if err != nil {
		return abort("%v", err)
	}
	masks, err := t.masks(ws, req.Hidden)
	if err != nil {
		return abort("%v", err)
	}
	if req.Overlay != nil {
		if p.overlay, err = t.checkOverlay(ws, req.Overlay); err != nil {
			return abort("%v", err)
		}
	}
	if t.container && len(masks) > 0 {
		// Security: container mode has no mount namespace to mask
		// them in, and Landlock can only allow: a root it grants
		// grants everything below it. (The launcher grants /etc entry
		// by entry around its own fixed list of secrets; a run's
		// protected paths are the operator's and IronVise's, and are
		// not carved out of the workspace or a root.) A protected path
		// the command could reach makes the run fail closed.
		return abort("%s", containerReachable(ws, masks))
	}
	scratch, err := t.newScratch()
	if err != nil {
		return abort("create scratch directory: %v; fix: make %s writable", err, t.scratchDir)
	}
	// The scratch directory never outlives the command (Start and
	// Discard remove it).
	p.scratch = scratch
	if t.container && t.switchUser {
		// A plain directory here, not a tmpfs mounted for the command:
		// it must be the command's own.
		if err := os.Chown(scratch.dir, t.uid, t.gid); err != nil {
			return abort("chown scratch directory %s to the command's user: %v", scratch.dir, err)
		}
	}
	lspec := t.launchSpec(req, ws, scratch.dir, masks, p.proxy)
	lspec.Overlay = p.overlay
	spec, err := lspec.Encode()
	if err != nil {
		return abort("encode launch specification: %v", err)
	}
	p.l, err = t.launch(ctx, spec)
	if err != nil {
		return abort("%s", startFailure(err, t.userNS))
	}
	p.stop = context.AfterFunc(ctx, p.l.kill)
	return p
}

// prepared is one command of the tier, confined in its launcher and held
// there until Start (sandbox.Prepared).
type prepared struct {
	t       *Tier
	ctx     context.Context
	req     sandbox.Request
	attempt sandbox.Attempt
	proxy   bool
	overlay *launch.Overlay
	scratch *hostScratch
	l       *launcher
	// stop undoes the kill on ctx's end.
	stop func() bool
	// result is set when Prepare failed: Start returns it.
	result *sandbox.Result
	used   bool
}

// Discard implements sandbox.Prepared: the launcher is killed before its
// command ran, and its scratch directory removed.
func (p *prepared) Discard() {
	if p.used {
		return
	}
	p.used = true
	if p.l == nil {
		return
	}
	p.stop()
	p.l.discard()
	p.scratch.remove()
	if !p.t.opts.OneCommand {
		p.t.keepReady(p.l.key)
	}
}

// Start implements sandbox.Prepared: the launcher execs the command, and
// the result is trusted only once the launcher confirmed the sandbox
// applied. The run's timeout starts here, and so does its duration.
func (p *prepared) Start() sandbox.Result {
	if p.used {
		return p.attempt.Abort("the prepared command was already started or discarded")
	}
	p.used = true
	if p.result != nil {
		return *p.result
	}
	t, l, ctx, req := p.t, p.l, p.ctx, p.req
	defer p.stop()
	defer p.scratch.remove()
	defer l.status.Close()
	defer l.proxy.Close()
	attempt := sandbox.Restart(p.attempt)
	timeout := t.opts.EffectiveTimeout(req)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := context.AfterFunc(rctx, l.kill)
	defer stop()
	if err := l.startCommand(); err != nil {
		// The launcher is gone (its status says why) or cannot be
		// told: either way nothing of the command may run.
		l.kill()
	}
	var px *proxyRun
	var proxyErr error
	if p.proxy {
		// The launcher sends the socket before its applied record; a
		// launcher that failed first closes its end, and its status
		// record says why.
		if px, proxyErr = t.serveProxy(rctx, l, req.Egress); proxyErr != nil {
			l.kill()
		}
	}
	applied, outcome, setupErr := readStatus(l.status)
	<-l.exited
	// The launcher was PID 1 of the command's namespace: nothing of the
	// command is left to use the proxy.
	records := px.stop()
	if !t.opts.OneCommand {
		t.keepReady(l.key)
	}
	cmd, waitErr := l.cmd, l.waitErr
	dur := attempt.Elapsed()

	res := sandbox.Ran(sandbox.TierNativeLinux, dur, &l.stdout, &l.stderr)
	res.Egress = records
	var expired time.Duration
	if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		expired = timeout
	}
	if reason := unconfirmed(ctx, expired, cmd, applied, setupErr, waitErr, res.Stderr); reason != "" {
		return sandbox.Aborted(sandbox.TierNativeLinux, reason, dur)
	}
	if proxyErr != nil {
		return sandbox.Aborted(sandbox.TierNativeLinux, proxyErr.Error()+"; fix: set ECTO_SANDBOX_NETWORK=none to run without network, and report this with the output of `ironvise sandbox doctor`", dur)
	}
	scratch := p.scratch
	res.Enforced = t.enforced(applied, scratch.dir)
	if p.proxy {
		res.Enforced.Network = networkProxy
	}
	if p.overlay != nil {
		// The launcher checked the mount before exec; a record without
		// it means the command did not run on the overlay.
		if applied.Overlay == "" || !slices.Contains(applied.Verified, launch.VerifiedOverlay) {
			return sandbox.Aborted(sandbox.TierNativeLinux, "overlay mode: the launcher did not confirm the workspace's overlay; report this with the output of `ironvise sandbox doctor`", dur)
		}
		overlayEnforced(res.Enforced, applied, len(p.overlay.Layers))
	}
	res.ExecMode = applied.Exec
	res.Enforced.Scratch.Cleanup = scratch.remove()
	if cmd.ProcessState == nil {
		return sandbox.Aborted(sandbox.TierNativeLinux, "wait for command: "+waitErr.Error(), dur)
	}
	res.ExitCode, res.Signal = sandbox.ProcessOutcome(cmd.ProcessState)
	if t.container {
		// The launcher's process is the reaper: the command's own end
		// is its last record, written once none of its processes was
		// left.
		if outcome == nil && rctx.Err() == nil {
			return sandbox.Aborted(sandbox.TierNativeLinux, "the reaper did not report how the command ended ("+cmd.ProcessState.String()+"): "+sandbox.FirstLine(res.Stderr, 200), dur)
		}
		if outcome != nil {
			res.ExitCode, res.Signal = outcomeOf(outcome)
		}
	}
	if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		res.TimedOut(timeout, dur, "every process of the command was killed")
	} else if ctx.Err() != nil {
		res.Status = sandbox.StatusAborted
		res.Reason = "run cancelled: " + ctx.Err().Error()
	}
	return res
}

// containerReachable explains a refused container-mode run: protected
// paths the command could read.
func containerReachable(ws string, paths []string) string {
	var in, under []string
	for _, p := range paths {
		if secretpaths.Within(p, ws) {
			in = append(in, p)
		} else {
			under = append(under, p)
		}
	}
	msg := "container mode keeps protected paths out of the command's reach by construction and cannot mask them"
	if len(in) > 0 {
		msg += fmt.Sprintf("; the workspace %s contains %s; fix: choose a workspace that holds no protected path (IronVise's data directory, key and secret directories)", ws, strings.Join(in, ", "))
	}
	if len(under) > 0 {
		msg += fmt.Sprintf("; %s lie under a system directory every command may read; fix: move them out of %s", strings.Join(under, ", "), strings.Join(launch.SystemReadRoots(), ", "))
	}
	return msg
}

// masks are the protected paths the launcher covers for a command in ws:
// the tier's and the request's, under each name the mounts give them, each
// that the command could reach (inside the workspace or a readable system
// root) and that was not found absent as the list was resolved for it.
func (t *Tier) masks(ws string, reqHidden []string) ([]string, error) {
	var resolved sandbox.Hidden
	if t.hiddenCache != nil && len(reqHidden) == 0 {
		resolved = t.hiddenCache.resolve(t.hidden)
	} else {
		resolved = resolveHidden(t.hidden, reqHidden)
	}
	hidden := resolved.Paths
	// Security: each protected path, and each of the launcher's own
	// masks, is masked under every other name a mount gives it (package
	// sandbox/mounts), not only under the one listed. The launcher's
	// namespace is a copy of this one under the same mount table (a ready
	// launcher started under another is not used: spare_linux.go); a
	// mount made on the host after the command's namespace was built
	// reaches it only through shared propagation, which takes a host
	// root: the window hiddencache_linux.go describes for links.
	hidden, err := mounts.WithAliases(hidden, launch.FixedMasks())
	if err != nil {
		return nil, err
	}
	// Security: / or a system directory as the workspace would grant it
	// whole to Landlock, and one inside a protected path cannot be
	// masked; the front ends refuse both, and the tier does not rely on
	// them (the same check as theirs and the container tier's).
	if err := secretpaths.CheckWorkspace(ws, secretpaths.List{Paths: hidden}); err != nil {
		return nil, err
	}
	if err := mounts.CheckWorkspace(ws); err != nil {
		return nil, err
	}
	var visible []string
	for _, h := range hidden {
		if resolved.Absent[h] {
			// Nothing to mask: resolving the list for this command
			// (or the kept answer, which every change to a name it
			// read drops) found nothing there, or a link, whose
			// target is an entry of its own. The launcher asks the
			// kernel about each path it is sent, on the way to the
			// command; most of a host's list is absent (the same
			// stores under every home, system users' included), and
			// each of those questions was a few microseconds there
			// (docs/operate/performance.md). A path created after
			// this is not masked, as one created after the
			// launcher's own question never was.
			continue
		}
		if secretpaths.Within(h, ws) || slices.ContainsFunc(t.readRoots, func(r string) bool { return secretpaths.Within(h, r) }) {
			if t.container {
				// Nothing to read where nothing exists; a mount
				// namespace masks a missing path as a no-op too.
				if _, err := os.Lstat(h); err != nil {
					continue
				}
			}
			visible = append(visible, h)
		}
	}
	return visible, nil
}

// hostScratch is a command's scratch directory on the host. It is only the
// mount point of the command's tmpfs: the command's files lived in its
// mount namespace and went with it.
type hostScratch struct {
	dir   string
	plain bool // container mode: a plain directory, not a tmpfs's mount point
	// shared is the tier's mount point, which dir is, kept for the next
	// command; nil when dir is the command's own.
	shared  *sharedMountPoint
	log     *slog.Logger
	removed bool
	outcome string // what remove reported
}

// newScratch makes the directory a command's scratch tmpfs is mounted on
// (in container mode, the plain directory that is its scratch space). A
// tier that runs many commands (serve) mounts them all on one directory
// of its own, which only ever holds mounts in the commands' namespaces:
// making and removing a directory per command cost 0.5 to 1.8 ms, the
// removal most (rmdir of a directory that was a mount point in a
// namespace being torn down).
func (t *Tier) newScratch() (*hostScratch, error) {
	if !t.container && !t.opts.OneCommand {
		dir, err := t.mountPoint.get(t.scratchDir)
		if err != nil {
			return nil, err
		}
		return &hostScratch{dir: dir, log: t.log, shared: &t.mountPoint}, nil
	}
	dir, err := os.MkdirTemp(t.scratchDir, "ironvise-scratch-")
	if err != nil {
		return nil, err
	}
	return &hostScratch{dir: dir, log: t.log, plain: t.container}, nil
}

// sharedMountPoint is the one scratch mount point of a tier that runs many
// commands. Each command's tmpfs is mounted on it in that command's own
// mount namespace, so commands running at once each see their own, and on
// the host it stays an empty directory.
type sharedMountPoint struct {
	mu  sync.Mutex
	dir string
	// users counts the commands between get and release; the tier's
	// Close removes the directory once none is left (a removal would
	// detach a running command's tmpfs).
	users  int
	closed bool
}

// get returns the mount point, made again when it has gone (a cleaner of
// the temporary directory removed it) or is no longer a directory. Its
// times are refreshed on each use, so that an age-based cleaner leaves a
// directory in use alone. Each get is paired with a release.
func (m *sharedMountPoint) get(parent string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dir != "" {
		now := time.Now()
		if st, err := os.Lstat(m.dir); err == nil && st.IsDir() && os.Chtimes(m.dir, now, now) == nil {
			m.users++
			return m.dir, nil
		}
	}
	dir, err := os.MkdirTemp(parent, "ironvise-scratch-")
	if err != nil {
		return "", err
	}
	m.dir = dir
	m.users++
	return dir, nil
}

// release ends a command's use of the mount point.
func (m *sharedMountPoint) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.users--
	m.removeIfDone()
}

// close removes the mount point now or, when commands still use it, once
// the last one released it (Tier.Close).
func (m *sharedMountPoint) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.removeIfDone()
}

func (m *sharedMountPoint) removeIfDone() {
	if m.closed && m.users == 0 && m.dir != "" {
		_ = os.Remove(m.dir)
		m.dir = ""
	}
}

// maxUnlockDepth bounds unlockTree's recursion (one descriptor per level).
const maxUnlockDepth = 4096

// unlockTree gives the owner full access to dir and every directory below
// it. Security: the tree is the command's, so nothing in it is followed:
// each directory is opened O_PATH|O_NOFOLLOW, and changed through its
// descriptor's /proc/self/fd link, never by name, so that a symlink the
// command planted cannot redirect a chmod to a file outside.
func unlockTree(dir string, depth int) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	return unlockAt(fd, depth)
}

func unlockAt(fd, depth int) error {
	defer unix.Close(fd)
	if depth > maxUnlockDepth {
		return fmt.Errorf("directories nested over %d levels", maxUnlockDepth)
	}
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), 0o700); err != nil {
		return err
	}
	rd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(rd), "scratch")
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		sub, err := unix.Openat(fd, n, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // not a directory, or a symlink
		}
		if err := unlockAt(sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes the directory, once, and reports the outcome for
// sandbox.Scratch.Cleanup.
func (s *hostScratch) remove() string {
	if s.removed {
		return s.outcome
	}
	s.removed, s.outcome = true, sandbox.ScratchRemoved
	if s.shared != nil {
		// The command's tmpfs went with its mount namespace; the mount
		// point stays for the next command, as empty as it was made.
		empty, err := emptyDir(s.dir)
		s.shared.release()
		if err == nil && !empty {
			err = errors.New("the host's directory is not empty")
		}
		if err != nil {
			s.log.Warn("sandbox: scratch mount point", "dir", s.dir, "err", err)
			s.outcome = fmt.Sprintf("left %s: %v", s.dir, err)
		}
		return s.outcome
	}
	err := os.RemoveAll(s.dir)
	if err != nil && s.plain {
		// The command's files are on disk here, and a tree it left
		// without permissions (chmod 000) stops RemoveAll when IronVise
		// is their owner without CAP_DAC_OVERRIDE.
		if uerr := unlockTree(s.dir, 0); uerr == nil {
			err = os.RemoveAll(s.dir)
		}
	}
	if err != nil {
		s.log.Warn("sandbox: remove scratch directory", "dir", s.dir, "err", err)
		s.outcome = fmt.Sprintf("left %s: %v", s.dir, err)
	}
	return s.outcome
}

// launchSpec is what the launcher applies before it runs the command. A
// command that needs no shell travels with its argument vector as well,
// which the launcher execs directly (argv mode): one exec instead of two,
// with the same outcome. The checks saw req.Command either way.
func (t *Tier) launchSpec(req sandbox.Request, ws, scratch string, masks []string, proxy bool) launch.Spec {
	var argv []string
	if !t.shellOnly {
		argv, _ = shell.SimpleArgv(req.Command)
	}
	prof := t.seccomp
	env := t.commandEnv(ws, scratch)
	if proxy {
		// Built already: prepare refuses a proxy-mode command whose
		// profile failed to build.
		prof, _ = t.proxySeccomp()
		proxyEnv(env)
	}
	return launch.Spec{
		Command: req.Command, Argv: argv, Workspace: ws, Scratch: scratch, Limits: launchLimits(t.opts.Limits.Tighten(req.Limits)),
		Hide: masks, ScratchMiB: t.opts.ScratchMiB,
		SwitchUser: t.switchUser, UID: t.uid, GID: t.gid, UserNS: t.userNS, Container: t.container, Inject: t.inject,
		Seccomp: prof.Bytes(), SeccompSHA256: prof.SHA256, Proxy: proxy, TimerSlackNS: t.timerSlack,
		Env: sandbox.CommandEnv(req.Env, env),
	}
}

// unconfirmed is why a finished launcher's run cannot be trusted: a setup
// step failed, or no record confirmed the sandbox applied (the launcher
// died first, or the run was cancelled). "" means it was confirmed.
//
// expired is the run's timeout when it expired (zero otherwise): a
// launcher killed for it before it applied the sandbox did not fail, it
// ran out of time, and the reason says so.
func unconfirmed(ctx context.Context, expired time.Duration, cmd *exec.Cmd, applied *launch.Applied, setupErr *launch.SetupError, waitErr error, stderr string) string {
	switch {
	case setupErr != nil:
		return "sandbox setup failed: " + setupErr.Error()
	case applied != nil:
		return ""
	case ctx.Err() != nil:
		return "run cancelled: " + ctx.Err().Error()
	case expired > 0:
		return fmt.Sprintf("the run's timeout of %s expired before the launcher applied the sandbox (it was killed); fix: on a loaded machine raise ECTO_SANDBOX_TIMEOUT_SECS", expired)
	}
	reason := "the launcher exited before applying the sandbox"
	if cmd.ProcessState != nil {
		reason += " (" + cmd.ProcessState.String() + ")"
	} else if waitErr != nil {
		reason += ": " + waitErr.Error()
	}
	if line := sandbox.FirstLine(stderr, 200); line != "" {
		reason += ": " + line
	}
	return reason
}

// launchLimits converts the limits for the launcher.
func launchLimits(l sandbox.Limits) launch.Limits {
	return launch.Limits{CPUSecs: l.CPUSecs, MemMiB: l.MemMiB, NoFile: l.NoFile, NProc: l.NProc, FSizeMiB: l.FSizeMiB}
}

// commandEnv is what the tier sets in the command's environment.
func (t *Tier) commandEnv(ws, scratch string) map[string]string {
	env := map[string]string{
		"PATH": t.path, "HOME": scratch, "TMPDIR": scratch, "PWD": ws, "SHELL": "/bin/sh",
	}
	if t.userName != "" {
		env["USER"], env["LOGNAME"] = t.userName, t.userName
	}
	return env
}

// startFailure explains a failed clone/exec of the launcher.
func startFailure(err error, userNS bool) string {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EINVAL) {
		where := ""
		if c := containerHint(); c != "" {
			where = " (IronVise runs in a container: " + c + ")"
		}
		if userNS {
			return fmt.Sprintf("cannot create the sandbox namespaces%s: %v; fix: %s; on a host, run IronVise as root, or allow unprivileged user namespaces (sysctl -w kernel.unprivileged_userns_clone=1; on Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0)", where, err, launch.ContainerFix)
		}
		return fmt.Sprintf("cannot create the sandbox namespaces%s: %v; fix: run IronVise with CAP_SYS_ADMIN (as root) outside a restrictive seccomp profile; %s", where, err, launch.ContainerFix)
	}
	return fmt.Sprintf("start the sandbox launcher: %v", err)
}

// containerHint names the file that shows IronVise runs in a container
// ("" when none does). It only improves messages: nothing is decided by
// it, so that a container is never a reason to enforce less.
func containerHint() string {
	for _, f := range []string{"/run/.containerenv", "/.dockerenv"} {
		if _, err := os.Stat(f); err == nil {
			return f + " exists"
		}
	}
	return ""
}

// outcomeOf is the exit code or signal name of a reaper's record.
func outcomeOf(o *launch.Outcome) (*int, string) {
	if o.Signal != 0 {
		if name := unix.SignalName(syscall.Signal(o.Signal)); name != "" {
			return nil, name
		}
		return nil, sandbox.SignalName(o.Signal)
	}
	code := o.Exit
	return &code, ""
}

// readStatus reads the launcher's status records until the pipe closes
// (at exec, or when the launcher dies). A missing applied record means
// the sandbox was not confirmed: the caller aborts.
func readStatus(r io.Reader) (*launch.Applied, *launch.Outcome, *launch.SetupError) {
	var applied *launch.Applied
	var outcome *launch.Outcome
	sc := bufio.NewScanner(io.LimitReader(r, 1<<16))
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	for sc.Scan() {
		rec, err := launch.ParseStatus(sc.Bytes())
		if err != nil {
			return nil, nil, &launch.SetupError{Step: "status", Message: "malformed status record from the launcher: " + err.Error()}
		}
		if rec.Error != nil {
			return nil, nil, rec.Error
		}
		if rec.Applied != nil {
			applied = rec.Applied
		}
		if rec.Outcome != nil {
			outcome = rec.Outcome
		}
	}
	return applied, outcome, nil
}

// enforced converts the launcher's record for the sandbox_result.
func (t *Tier) enforced(a *launch.Applied, scratch string) *sandbox.Enforced {
	abi, uid, nnp := a.LandlockABI, a.UID, a.NoNewPrivs
	caps := "none"
	if a.CapEffective != 0 || a.CapPermitted != 0 {
		caps = fmt.Sprintf("%#x", a.CapEffective)
	}
	rl := sandbox.RLimits{CPUSecs: a.RLimits.CPUSecs, ASMiB: a.RLimits.ASMiB, NoFile: a.RLimits.NoFile, NProc: a.RLimits.NProc, FSizeMiB: a.RLimits.FSizeMiB}
	e := &sandbox.Enforced{
		LandlockABI: &abi, SeccompProfileSHA256: a.SeccompSHA256, RLimits: &rl, UID: &uid,
		Capabilities: caps, NoNewPrivs: &nnp, Network: "none", ScratchDir: scratch,
		Namespaces: a.Namespaces, HiddenPaths: &a.Hidden, Verified: a.Verified,
		Scratch: &sandbox.Scratch{MiB: a.ScratchMiB, Inodes: a.ScratchInodes}, Isolation: sandbox.IsolationNamespaces,
	}
	if t.container {
		// No scratch tmpfs and no masks: the scratch directory is a
		// plain one on the container's disk, and the protected paths
		// were kept out of reach, not masked.
		e.Isolation, e.HiddenPaths = sandbox.IsolationContainer, nil
		e.Scratch = &sandbox.Scratch{}
	}
	if a.PidMax > 0 {
		pm := a.PidMax
		e.PidMax = &pm
	}
	return e
}

// DelegatesToContainer implements sandbox.Delegating: true in container
// mode.
func (t *Tier) DelegatesToContainer() bool { return t.container }

// Compile-time checks.
var (
	_ sandbox.Tier       = (*Tier)(nil)
	_ sandbox.Delegating = (*Tier)(nil)
)
