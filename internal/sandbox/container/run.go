package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/mounts"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/timerslack"
)

// Exit codes the runtimes use for their own failures (docker run(1),
// podman-run(1)).
const (
	exitRuntimeError  = 125 // the runtime itself failed
	exitCannotInvoke  = 126 // the container's command cannot be invoked
	exitNotFound      = 127 // the container's command was not found
	clientGracePeriod = 10 * time.Second
)

// Run implements sandbox.Tier.
func (t *Tier) Run(ctx context.Context, req sandbox.Request) sandbox.Result {
	attempt, err := sandbox.Begin(t.Name(), req)
	abort := attempt.Abort
	if err != nil {
		return abort("%v", err)
	}
	pre, err := t.preflight(ctx)
	if err != nil {
		return abort("%v", err)
	}
	proxyMode, profileOCI := req.Egress != nil, t.profile
	if proxyMode {
		if reason, fix := proxyRefusal(t.runtime, runtime.GOOS, os.Geteuid(), pre.remote); reason != "" {
			return abort("proxy mode (ECTO_SANDBOX_NETWORK=proxy) cannot be applied on the %s tier: %s; fix: %s", t.runtime, reason, fix)
		}
		profileOCI = t.proxyProfile
	}
	if req.Overlay != nil {
		if reason, fix := overlayRefusal(t.runtime, runtime.GOOS, os.Geteuid(), pre.remote); reason != "" {
			return abort("overlay mode (ECTO_SANDBOX_WORKSPACE=overlay) cannot be applied on the %s tier: %s; fix: %s", t.runtime, reason, fix)
		}
	}
	ws, err := sandbox.ResolveWorkspace(req.Workspace)
	if err != nil {
		return abort("%v", err)
	}
	if !filepath.IsAbs(ws) || !mountSafe(ws) {
		return abort("workspace %q cannot be bind-mounted: its path contains a comma, a quote or a line break; fix: use a workspace path without them", ws)
	}
	// Security: / or a system directory as the workspace (by name or,
	// symlinks resolved above, by a link to it) would show the command the
	// host's configuration, keys and other users' files. The front ends
	// refuse it too; the tier does not rely on them.
	if err := secretpaths.CheckWorkspace(ws, secretpaths.List{}); err != nil {
		return abort("%v", err)
	}
	// Security: and by another name a mount gives it (a bind of /etc).
	if err := mounts.CheckWorkspace(ws); err != nil {
		return abort("%v", err)
	}
	// Security: the protected paths inside the workspace (a home
	// workspace holds ~/.ssh and the data directory) are covered in the
	// container; the checks refuse naming them, this hides them from
	// whatever the command computes.
	// The engine binds the workspace recursively, so a mount inside it
	// that shows a protected path (or /etc's secrets) under another name
	// shows it in the container too: those names are covered as well.
	hidden, err := mounts.WithAliases(sandbox.HiddenPaths(t.opts.Hidden, req.Hidden), launch.FixedMasks())
	if err != nil {
		return abort("%v", err)
	}
	plan, err := planMasks(ws, hidden)
	if err != nil {
		return abort("%v", err)
	}
	name, err := containerName()
	if err != nil {
		return abort("name the container: %v", err)
	}
	// The run's private directory holds the seccomp profile and the empty
	// mask sources, and is the client's working directory: Podman's
	// conmon drops an "oom" marker file into it when the kernel OOM-kills
	// a container, which must not land in the caller's (often the
	// workspace's parent or a repository).
	private, err := os.MkdirTemp("", "ironvise-runtime-")
	if err != nil {
		return abort("create a private directory for the run: %v; fix: make the temporary directory (TMPDIR) writable", err)
	}
	// keepPrivate is set when overlay mounts could not be undone: never
	// remove recursively through a mount.
	keepPrivate := false
	defer func() {
		if !keepPrivate {
			os.RemoveAll(private)
		}
	}()
	profile := filepath.Join(private, "seccomp.json")
	if err := os.WriteFile(profile, profileOCI.JSON, 0o600); err != nil {
		return abort("write the seccomp profile: %v; fix: make the temporary directory (TMPDIR) writable", err)
	}
	masks, err := plan.mounts(private)
	if err != nil {
		return abort("%v", err)
	}
	// In overlay mode the container's /workspace is the merged view
	// (overlay.go); the mounts are undone when Run returns, after the
	// container is gone, and before the private directory is removed.
	source := ws
	if req.Overlay != nil {
		stack, err := checkOverlay(ws, req.Overlay)
		if err != nil {
			return abort("%v", err)
		}
		ovl, err := mountOverlay(private, ws, stack)
		if err != nil {
			return abort("%v; the command did not run and the workspace is untouched", err)
		}
		defer func() {
			if err := ovl.Unmount(); err != nil {
				keepPrivate = true
				t.log.Error("sandbox container: overlay mode: undo the mounts", "err", err)
			}
		}()
		if !mountSafe(ovl.Merged) {
			return abort("overlay mode: the mount directory %q cannot be bind-mounted: its path contains a comma, a quote or a line break; fix: set TMPDIR to a path without them", ovl.Merged)
		}
		source = ovl.Merged
	}

	limits := t.opts.Limits.Tighten(req.Limits)
	memBytes, memory := t.memBytes, t.memory
	if m := int64(req.Limits.MemMiB) << 20; m > 0 && m < memBytes {
		memBytes, memory = m, fmt.Sprintf("%dm", req.Limits.MemMiB)
	}
	set := map[string]string{"HOME": "/tmp", "TMPDIR": "/tmp"}
	if proxyMode {
		maps.Copy(set, ProxyEnv())
	}
	spec := runSpec{
		runtime: t.runtime, name: name, image: pre.imageID, workspace: source, writable: req.Overlay != nil, command: req.Command,
		env:    sandbox.CommandEnv(req.Env, set),
		memory: memory, cpus: t.cpus, pids: limits.NProc, cpuSecs: limits.CPUSecs, noFile: limits.NoFile,
		extra: t.extra, masks: masks, seccomp: profile, logDriver: pre.logDriver,
	}
	timeout := t.timeout
	if req.Timeout > 0 && req.Timeout < timeout {
		timeout = req.Timeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var proxy *egressRun
	if proxyMode {
		if proxy, err = t.startEgress(rctx, req.Egress); err != nil {
			return abort("proxy mode: %v", err)
		}
		// Stopped explicitly below once the container is gone; this
		// covers the early returns.
		defer proxy.stop()
		spec.netns = proxy.ns.Path
	}

	var stdout, stderr sandbox.Collector
	cmd := exec.CommandContext(rctx, t.bin, spec.argv()...)
	cmd.Stdin = nil // the container reads /dev/null
	cmd.Dir = private
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Security: on timeout or cancellation, remove the container itself;
	// the client is killed only after the grace period.
	cmd.Cancel = func() error {
		t.removeContainer(context.WithoutCancel(ctx), name, cmd)
		return nil
	}
	cmd.WaitDelay = clientGracePeriod
	// The runtime starts the command: it gets the command's timer slack.
	runErr := timerslack.Start(cmd.Start)
	if runErr == nil {
		runErr = cmd.Wait()
	}
	dur := attempt.Elapsed()
	timedOut := rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	if rctx.Err() != nil {
		// The client may have died before the container existed (docker's
		// daemon then still creates it): sweep once more by name.
		t.sweep(context.WithoutCancel(ctx), name)
	}

	res := sandbox.Ran(t.Name(), dur, &stdout, &stderr)
	res.Enforced = t.enforced(pre, spec, memBytes, profileOCI)
	if proxy != nil {
		// The container is gone: every connection it made has ended or
		// is cut now, and each has its record. An aborted run keeps
		// them too: the connections happened.
		records, serveErr := proxy.stop()
		res.Egress = records
		abort = func(format string, args ...any) sandbox.Result {
			r := attempt.Abort(format, args...)
			r.Egress = records
			return r
		}
		if serveErr != nil {
			return abort("the egress proxy stopped during the run: %v; the command's network failures may be IronVise's; fix: check IronVise's log and the host's descriptor limits", serveErr)
		}
	}
	switch {
	case timedOut:
		res.TimedOut(timeout, dur, "the container "+name+" was killed and removed")
		return res
	case ctx.Err() != nil:
		return abort("run cancelled: %v; the container %s was removed", ctx.Err(), name)
	case cmd.ProcessState == nil:
		return abort("start %s: %v", t.bin, runErr)
	}
	code := cmd.ProcessState.ExitCode()
	if code < 0 {
		t.forget()
		return abort("the %s client was killed (%v) before the command finished", t.runtime, runErr)
	}
	if reason, failed := t.runtimeFailure(code, stderr.Bytes()); failed {
		t.forget()
		return abort("%s", reason)
	}
	res.ExitCode = &code
	return res
}

// runtimeFailure decides whether exit code came from the runtime rather
// than the command (docs/design/sandbox.md#container-tier): 125 always; 126
// and 127 only when the runtime's own error line ends stderr, because sh -c
// in a started container returns them for the command's "not executable"/"not
// found". A command can forge that line, but only to have its own run
// recorded as aborted — the fail-closed direction, and no more than exiting
// 125 does.
func (t *Tier) runtimeFailure(code int, stderr []byte) (string, bool) {
	last := sandbox.LastLine(string(stderr), 300)
	switch code {
	case exitRuntimeError:
		if strings.HasPrefix(last, checkFailedPrefix) {
			// The preamble refused to run the command (see
			// confinementCheck).
			return fmt.Sprintf("the command did not run: %s; fix: check the runtime's configuration (containers.conf, daemon.json: userns, seccomp, capabilities) and ECTO_DOCKER_EXTRA_ARGS", last), true
		}
		if last == "" {
			last = "no message"
		}
		return fmt.Sprintf("the %s runtime failed (exit 125): %s", t.runtime, last), true
	case exitCannotInvoke, exitNotFound:
		if t.isRuntimeError(last) {
			return fmt.Sprintf("the container did not start (%s exit %d): %s", t.runtime, code, last), true
		}
	}
	return "", false
}

// isRuntimeError reports whether line is the runtime client's own error
// line: Podman prints "Error: …", Docker "docker: Error response …" or
// "docker: …".
func (t *Tier) isRuntimeError(line string) bool {
	if t.runtime == "podman" {
		return strings.HasPrefix(line, "Error: ")
	}
	return strings.HasPrefix(line, "docker: ")
}

// removeContainer kills and removes the container by name, retrying while
// the client runs: the container may not exist yet when the timeout fires.
func (t *Tier) removeContainer(ctx context.Context, name string, client *exec.Cmd) {
	deadline := time.Now().Add(clientGracePeriod)
	for {
		t.sweep(ctx, name)
		if time.Now().After(deadline) || !processAlive(client) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sweep force-removes the container; a missing container is not an error.
func (t *Tier) sweep(ctx context.Context, name string) {
	cctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	args := []string{"rm", "--force", name}
	if t.runtime == "podman" {
		// -t 0: SIGKILL at once instead of SIGTERM and a 10 s wait;
		// --ignore: no error when it is already gone.
		args = []string{"rm", "--force", "--time", "0", "--ignore", name}
	}
	cmd := exec.CommandContext(cctx, t.bin, args...)
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil && !strings.Contains(strings.ToLower(string(out)), "no such container") {
		t.log.Warn("sandbox container: remove container", "name", name, "err", err, "output", sandbox.LastLine(string(out), 300))
	}
}

// processAlive reports whether the client still runs: signal 0 fails once
// Wait has reaped it (and always on Windows, which then relies on the
// sweep after Wait).
func processAlive(c *exec.Cmd) bool {
	return c.Process != nil && c.Process.Signal(syscall.Signal(0)) == nil
}

// containerName returns a unique name: the key for removing the container.
func containerName() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "ironvise-" + hex.EncodeToString(b[:]), nil
}

// enforced is the record of what a run had in force.
func (t *Tier) enforced(p *preflight, s runSpec, memBytes int64, profile *seccomp.OCI) *sandbox.Enforced {
	nnp := true
	hidden := len(s.masks)
	uid := commandUID
	network := "none"
	if s.netns != "" {
		network = "proxy"
	}
	return &sandbox.Enforced{
		// The preamble checked the uid, the capabilities, no_new_privs and
		// the seccomp mode before the command ran (confinementCheck).
		UID: &uid, SeccompProfileSHA256: profile.SHA256,
		Capabilities: "none", NoNewPrivs: &nnp, Network: network, ScratchDir: "/tmp",
		Runtime: t.runtime, RuntimeVersion: p.version, Image: t.image, ImageDigest: p.imageID,
		Namespaces: []string{"pid", "mount", "network", "ipc", "uts"},
		Container: &sandbox.ContainerConfig{
			MemoryBytes: memBytes, CPUs: s.cpus, PidsLimit: s.pids, CPUSecs: s.cpuSecs, NoFile: s.noFile,
			TmpfsMiB: TmpfsMiB, ExtraArgs: s.extra,
		},
		HiddenPaths: &hidden,
		Workspace:   map[bool]string{true: "overlay"}[s.writable],
	}
}
