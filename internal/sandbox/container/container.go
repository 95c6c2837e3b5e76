// Package container implements the Docker / Podman sandbox tier
// (sandbox.md §6): every command runs in a fresh, hardened container that is
// removed afterwards.
//
// # What a run looks like
//
// Each Run starts the runtime's client with
//
//	run --rm --network=none --read-only --security-opt no-new-privileges
//	    --user nobody --memory M --memory-swap M --cpus C
//	    --cap-drop ALL --pids-limit P --tmpfs /tmp:… --pull=never
//	    --name ironvise-<random> --entrypoint= --mount type=bind,…,target=/workspace,readonly
//	    [--mount type=bind,source=<empty>,target=/workspace/<protected>,readonly …]
//	    --workdir /workspace --ulimit cpu=… --ulimit nofile=… …
//	    [ECTO_DOCKER_EXTRA_ARGS] <image> sh -c <command>
//
// The first line is the seed's floor; the rest is IronVise's hardening,
// including an empty read-only stand-in over each protected path
// (Options.Hidden and Request.Hidden) that lies inside the workspace. The
// image runs by the ID a preflight resolved (image inspect), so the digest
// recorded in the sandbox_result is the one that ran. The preflight — the
// runtime answers, the image is present — runs before the first command and
// is cached for a minute.
//
//	tier, err := container.New(ctx, opts) // opts.DockerImage = "alpine:3.19"
//	res := tier.Run(ctx, sandbox.Request{Command: "ls", Workspace: dir})
//
// # Failures
//
// A missing runtime, a daemon that does not answer, a missing image, a
// runtime error (exit 125, or 126/127 with the runtime's own error line) all
// abort the action with a reason that names the fix; the command is never
// run another way. The wall-clock timeout removes the container by its
// unique name (killing the client alone would leave it running).
//
// # Limitations
//
// The container shares the host kernel: a kernel exploit escapes it (use
// the microVM tier for untrusted workloads). The workspace must be readable
// by the image's nobody user. With ECTO_DOCKER_RUNTIME=auto the runtime is
// chosen once, when the tier is built. ECTO_DOCKER_EXTRA_ARGS accepts only
// flags that cannot weaken the floor (see [AllowedExtraFlags]).
package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
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
