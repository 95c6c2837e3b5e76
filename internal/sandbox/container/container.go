// Package container implements the Docker / Podman sandbox tier
// (docs/design/sandbox.md#container-tier): every command runs in a fresh,
// hardened container that is removed afterwards.
//
// # What a run looks like
//
// Each Run starts the runtime's client with
//
//	run --rm --network=none --read-only --security-opt no-new-privileges
//	    --user 65534:65534 --memory M --memory-swap M --cpus C
//	    --cap-drop ALL --security-opt seccomp=<IronVise's profile>
//	    --pids-limit P --tmpfs /tmp:… --shm-size 16m
//	    --log-driver passthrough|none --pull=never
//	    --name ironvise-<random> --entrypoint= --mount type=bind,…,target=/workspace,readonly
//	    [--mount type=bind,source=<empty>,target=/workspace/<protected>,readonly …]
//	    --workdir /workspace --ulimit cpu=… --ulimit nofile=… …
//	    [Podman: --read-only-tmpfs=false --http-proxy=false]
//	    [ECTO_DOCKER_EXTRA_ARGS] <image> sh -c <preamble> sh <command>
//
// The first line is the floor docs/sandboxing.md promises; the rest is IronVise's hardening,
// including the native tier's seccomp allowlist (package seccomp, written
// per run as the runtimes' JSON profile), a log driver that stores nothing
// (the output streams to IronVise's capped collector only), none of
// IronVise's own proxy variables (Podman copies them by default), and an empty
// read-only stand-in over each protected path (Options.Hidden and
// Request.Hidden) that lies inside the workspace. The preamble reads the
// shell's /proc/self/status and aborts the run unless the command is
// 65534:65534 with no other group, no capabilities, no_new_privs and a
// seccomp filter. The image runs by the ID a preflight resolved (image
// inspect), so the digest recorded in the sandbox_result is the one that
// ran. The preflight — the runtime answers, the image is present — runs
// before the first command and is cached for a minute.
//
//	tier, err := container.New(ctx, opts) // opts.DockerImage = "alpine:3.19"
//	res := tier.Run(ctx, sandbox.Request{Command: "ls", Workspace: dir})
//
// # Proxy mode
//
// A request with Egress (ECTO_SANDBOX_NETWORK=proxy) runs the same way,
// except that the container joins a network namespace IronVise made for
// it (--network=ns:…) instead of an empty one: loopback only, with
// IronVise's egress proxy listening at [ProxyAddr] on it and dialling out
// from IronVise's own namespace. The command gets [ProxyEnv], no
// resolv.conf (--dns=none), and a seccomp profile that adds TCP client
// sockets (seccomp.OCIProxyProfile). Every connection is a record in
// Result.Egress; Enforced.Network says "proxy". It takes a local, rootful
// Podman on Linux: with Docker, rootless or remote Podman the run aborts
// (never a bridge network instead).
//
// # Overlay mode
//
// A request with Overlay (ECTO_SANDBOX_WORKSPACE=overlay) runs the same way,
// except that /workspace is writable: it is an overlayfs IronVise mounts on
// the host for the run — the session's accepted layers over the real
// workspace, the request's upper and work directories — each layer
// idmapped so that the workspace owner's files are the command's (uid
// 65534) and what the command writes is the owner's in the upper layer
// (see overlay.go). The real workspace is never written; the mounts are
// undone when the run ends, however it ends. It takes a local, rootful
// Podman on Linux and a workspace not owned by root: otherwise, and when
// the stack cannot be mounted, the run aborts and the command does not run.
//
// # Failures
//
// A missing runtime, a daemon that does not answer, a missing image, a
// runtime error (exit 125, or 126/127 with the runtime's own error line), a
// container not confined as required, a workspace that is / or a system
// directory (symlinks resolved) all abort the action with a reason that
// names the fix; the command is never run another way. The wall-clock
// timeout removes the container by its unique name (killing the client
// alone would leave it running).
//
// # Limitations
//
// The container shares the host kernel: a kernel exploit escapes it (use
// the microVM tier for untrusted workloads). The workspace must be readable
// by uid 65534. With ECTO_DOCKER_RUNTIME=auto the runtime is chosen once,
// when the tier is built. ECTO_DOCKER_EXTRA_ARGS accepts only flags that
// cannot weaken the floor (see [AllowedExtraFlags]). The seccomp profile
// exists for linux/amd64 and linux/arm64 containers of the host's
// architecture only.
package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
)

// Errors of this package, compared with errors.Is.
var (
	// ErrExtraArgs means ECTO_DOCKER_EXTRA_ARGS holds a flag the tier does
	// not accept.
	ErrExtraArgs = errors.New("container: ECTO_DOCKER_EXTRA_ARGS rejected")
)

// Settings of the hardening that have no variable of their own.
const (
	// TmpfsMiB is the size of the writable /tmp of each container.
	TmpfsMiB = 64
	// ShmMiB is the size of the container's /dev/shm, its second
	// writable place (POSIX shared memory and semaphores): a tmpfs
	// mounted nosuid, nodev and noexec, counted in the memory limit.
	ShmMiB = 16
	// nprocUlimit is the RLIMIT_NPROC backstop. It counts every process of
	// the container's uid on the host, so it is generous; --pids-limit is
	// the per-container limit. It is set explicitly because Podman, once
	// any --ulimit is given, raises unset limits to the maximum, which a
	// host with capped hard limits refuses.
	nprocUlimit = 4096
	// preflightTTL is how long a successful preflight is trusted.
	preflightTTL = time.Minute
	// cleanupTimeout bounds each runtime call made to remove a container.
	cleanupTimeout = 15 * time.Second
)

// Tier is the Docker / Podman tier.
type Tier struct {
	opts    sandbox.Options
	log     *slog.Logger
	image   string
	runtime string // "docker" or "podman"; the tier's name
	bin     string // the runtime client; "" when none was found
	// noRuntime explains why bin is empty (and the fix).
	noRuntime *sandbox.UnavailableError
	memory    string
	memBytes  int64
	cpus      string
	timeout   time.Duration
	extra     []string
	// profile is IronVise's seccomp profile for the containers; nil, with
	// noProfile saying why, where there is none for this architecture.
	profile   *seccomp.OCI
	noProfile *sandbox.UnavailableError
	// proxyProfile is the profile of proxy-mode runs (TCP client sockets
	// allowed); nil where profile is.
	proxyProfile *seccomp.OCI

	mu      sync.Mutex
	cached  *preflight // guarded by mu; nil until a preflight succeeded
	checked time.Time  // guarded by mu; when cached was made
}

// New returns the container tier for opts. It fails only on configuration it
// cannot act on (ECTO_DOCKER_EXTRA_ARGS with a flag that would weaken the
// sandbox). Whether a runtime and the image are there is reported by
// Available and by each Run. With ECTO_DOCKER_RUNTIME=auto, New asks the
// Docker daemon whether it answers (bounded by ctx and a few seconds).
func New(ctx context.Context, opts sandbox.Options) (sandbox.Tier, error) {
	opts = opts.WithDefaults()
	c := opts.Container
	t := &Tier{
		opts: opts, log: opts.Logger, image: opts.DockerImage,
		memory: c.Memory, memBytes: c.MemoryBytes, cpus: c.CPUs, timeout: c.Timeout,
		extra: append([]string(nil), c.ExtraArgs...),
	}
	if t.memory == "" || t.memBytes <= 0 {
		t.memory, t.memBytes = sandbox.DefaultContainerMemory, 256<<20
	}
	if t.cpus == "" {
		t.cpus = sandbox.DefaultContainerCPUs
	}
	if t.timeout <= 0 {
		t.timeout = sandbox.DefaultTimeout
	}
	if err := checkExtraArgs(t.extra); err != nil {
		return nil, err
	}
	t.resolveRuntime(ctx, c.Runtime)
	// The containers run the host's architecture (the image is local and
	// run by ID); without a profile for it every run aborts.
	var err error
	if t.profile, err = seccomp.OCIProfile(runtime.GOARCH); err != nil {
		t.noProfile = t.unavailable("no seccomp profile for "+runtime.GOARCH+" containers", "use the native or Firecracker tier on this host", err)
	} else if t.proxyProfile, err = seccomp.OCIProxyProfile(runtime.GOARCH); err != nil {
		t.noProfile = t.unavailable("no proxy-mode seccomp profile for "+runtime.GOARCH+" containers", "use the native or Firecracker tier on this host", err)
	}
	return t, nil
}

// Name implements sandbox.Tier: "docker" or "podman".
func (t *Tier) Name() sandbox.TierName { return sandbox.TierName(t.runtime) }

// Available implements sandbox.Tier: the runtime answers and the image is
// present (the cached preflight).
func (t *Tier) Available(ctx context.Context) error {
	_, err := t.preflight(ctx)
	return err
}

// SelfTest implements sandbox.Tier: a command runs in a container, reads the
// workspace and cannot write it.
func (t *Tier) SelfTest(ctx context.Context) error { return sandbox.SelfTest(ctx, t) }

// unavailable builds the error of a tier that cannot be applied.
func (t *Tier) unavailable(reason, fix string, err error) *sandbox.UnavailableError {
	return &sandbox.UnavailableError{Tier: t.Name(), Reason: reason, Fix: fix, Err: err}
}

// Compile-time check.
var _ sandbox.Tier = (*Tier)(nil)

// quote is %q for messages.
func quote(s string) string { return fmt.Sprintf("%q", s) }
