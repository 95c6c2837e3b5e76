// Package sandbox runs an approved command inside a sandbox tier that fails
// closed, and returns a [Result] that says what ran and what was enforced
// (docs/design/sandbox.md#fail-closed).
//
// # Model
//
// A [Tier] is one confinement mechanism: the native tier of the host OS
// (package sandbox/native), a container, or a microVM. [Select] picks the tier
// from typed [Options] in the order of docs/design/sandbox.md#tier-selection;
// a forced tier that is unavailable is an error, never a fallback to a weaker
// tier. Every run returns a [Result] whose Status is ok, aborted, permissive
// or timeout; a tier that cannot be applied yields Status aborted with a
// reason naming the fix, and the command does not run.
//
//	tier, err := sandbox.Select(opts, sandbox.Factories{Native: native.New})
//	if err != nil { ... } // the selected tier cannot be used here: stop
//	res := tier.Run(ctx, sandbox.Request{Command: "ls -la", Workspace: dir})
//	text := res.Observation() // what the agent sees (docs/design/sandbox.md#sandbox-result)
//
// [Doctor] probes a tier from inside a real sandboxed child and reports each
// guarantee of docs/design/sandbox.md#guarantee-names as enforced,
// not_enforced or not_applicable.
//
// # Output
//
// Each stream keeps at most [CollectLimit] bytes while the command runs (the
// rest is counted and discarded) and is then capped at [StreamCap] bytes
// without splitting a UTF-8 sequence, with the marker of
// docs/design/checks.md#scanner-pipeline.
//
// # Limitations
//
// The package never reads environment variables: internal/config does, and
// the caller passes [Options]. It does not import the tiers either: the
// composition root passes their constructors in [Factories]; a tier without
// a constructor reports [ErrNotBuilt]. Permissive mode runs the command with
// no OS confinement at all; it exists for development only.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ironvise/ironvise/internal/egress"
)

// TierName is the tier field of a sandbox_result
// (docs/design/sandbox.md#sandbox-result).
type TierName string

// The tier names of docs/design/sandbox.md#sandbox-result.
const (
	TierNativeLinux   TierName = "native-linux"
	TierNativeDarwin  TierName = "native-darwin"
	TierNativeWindows TierName = "native-windows"
	TierDocker        TierName = "docker"
	TierPodman        TierName = "podman"
	TierFirecracker   TierName = "firecracker"
	TierNone          TierName = "none" // permissive: no OS confinement
)

// Tier is one confinement mechanism.
type Tier interface {
	// Name reports the tier recorded in every Result.
	Name() TierName
	// Available reports whether the tier can be applied on this host: nil,
	// or an error wrapping ErrUnavailable that names the fix. It does not
	// run a command.
	Available(ctx context.Context) error
	// Run runs req.Command and reports what happened. It never runs the
	// command unconfined: a tier that cannot be applied returns Status
	// aborted.
	Run(ctx context.Context, req Request) Result
	// SelfTest runs a small command through the tier and verifies that the
	// enforcement it claims is in place; `ironvise serve` calls it before
	// listening and refuses to start when it fails
	// (docs/design/sandbox.md#doctor-and-self-test).
	SelfTest(ctx context.Context) error
}

// Preparer is a Tier that can confine a command before it may run: the
// agent prepares a command while the ledger commits its intent, and starts
// it once the commit is durable, so that the confinement's cost overlaps
// the commit's instead of following it (docs/operate/performance.md).
type Preparer interface {
	Tier
	// Prepare confines req's command and holds it; nothing of the command
	// runs before Start. ctx is the run's (its end stops the command,
	// held or running). A failure to confine is the aborted Result
	// Start returns.
	Prepare(ctx context.Context, req Request) Prepared
}

// Prepared is a command confined by its tier and held before it runs.
// Exactly one of Start and Discard must be called.
type Prepared interface {
	// Start runs the command and reports what happened, as Tier.Run.
	Start() Result
	// Discard withdraws the command: it never runs.
	Discard()
}

// Prepare is t.Prepare when t is a Preparer; for any other tier, a
// Prepared whose Start runs req with t.Run then (Discard does nothing).
func Prepare(ctx context.Context, t Tier, req Request) Prepared {
	if p, ok := t.(Preparer); ok {
		return p.Prepare(ctx, req)
	}
	return &deferredRun{ctx: ctx, t: t, req: req}
}

// deferredRun is Prepare's answer for a tier that cannot prepare.
type deferredRun struct {
	ctx context.Context
	t   Tier
	req Request
}

func (d *deferredRun) Start() Result { return d.t.Run(d.ctx, d.req) }
func (d *deferredRun) Discard()      {}

// CloseTier releases what t keeps between commands (the native Linux
// tier's ready launcher) when it keeps anything; commands already running
// are not affected. Closing is not required for correctness — a tier's
// launcher also ends with the process — but a caller done with a tier
// should not leave it to the garbage collector.
func CloseTier(t Tier) error {
	if c, ok := t.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Request is one command to run.
type Request struct {
	// Command is the shell command, run as /bin/sh -c Command.
	Command string
	// Workspace is the absolute directory the command runs in. It is
	// read-only inside the sandbox.
	Workspace string
	// Env is the candidate environment (KEY=VALUE). Only the names of
	// [EnvAllowlist] pass; the tier sets PATH, HOME, TMPDIR and friends
	// itself, so secrets of the caller never reach the command.
	Env []string
	// Limits, when non-zero, lower the tier's limits for this command; a
	// field above the tier's configured limit is ignored (a request can only
	// tighten).
	Limits Limits
	// Timeout, when positive and shorter than the tier's, lowers the
	// wall-clock timeout for this command.
	Timeout time.Duration
	// Hidden adds protected paths for this command to Options.Hidden (a
	// request can only hide more, never less). doctor uses it to prove the
	// masking on a fixture of its own.
	Hidden []string
	// Egress, when non-nil, runs the command in proxy mode
	// (ECTO_SANDBOX_NETWORK=proxy, docs/reference/sandboxing.md#network-egress):
	// the command reaches the hosts these rules allow through IronVise's
	// egress proxy, and nothing else. The caller builds it from the
	// configuration narrowed by the session's policy. nil is no network at
	// all. A tier that cannot provide proxy mode aborts the run; it never
	// runs the command with more network or with none instead.
	Egress *egress.Rules
	// Overlay, when non-nil, runs the command in overlay mode
	// (ECTO_SANDBOX_WORKSPACE=overlay): the command sees the workspace
	// writable, as an overlay whose lowest layer is the real directory,
	// which is never written. A tier that cannot mount it aborts the run;
	// it never runs the command on the real workspace instead.
	Overlay *Overlay
}

// Overlay is the layer stack of one overlay-mode command. The caller
// (package overlay) owns the directories; the tier only mounts them.
type Overlay struct {
	// Layers are the directories of the session's earlier accepted
	// layers, newest first, stacked above the workspace (read-only to
	// the command).
	Layers []string
	// Upper and Work are this command's layer and overlayfs's work
	// directory: empty directories on the same filesystem. Everything
	// the command changes lands in Upper.
	Upper, Work string
}

// Limits are the resource limits of the native tiers
// (docs/design/sandbox.md#linux-native-tier). A zero field means "the
// default" in Options and "no change" in a Request.
type Limits struct {
	CPUSecs  int // RLIMIT_CPU, seconds
	MemMiB   int // RLIMIT_AS, MiB
	NoFile   int // RLIMIT_NOFILE
	NProc    int // process-count backstop
	FSizeMiB int // RLIMIT_FSIZE, MiB
}

// Default limits (docs/design/sandbox.md#linux-native-tier and docs/sandboxing.md: 30 s
// of CPU, 512 MiB of address space, 64 file descriptors; the process and
// file-size backstops are IronVise's).
const (
	DefaultCPUSecs  = 30
	DefaultMemMiB   = 512
	DefaultNoFile   = 64
	DefaultNProc    = 512
	DefaultFSizeMiB = 256
	DefaultTimeout  = 30 * time.Second
	// DefaultScratchMiB caps the scratch tmpfs of one command (bytes of
	// files and directories); its inode cap is scratchInodesPerMiB times
	// this.
	DefaultScratchMiB = 256
)

// DefaultLimits returns the limits used when Options leave them zero.
func DefaultLimits() Limits {
	return Limits{CPUSecs: DefaultCPUSecs, MemMiB: DefaultMemMiB, NoFile: DefaultNoFile, NProc: DefaultNProc, FSizeMiB: DefaultFSizeMiB}
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.CPUSecs <= 0 {
		l.CPUSecs = d.CPUSecs
	}
	if l.MemMiB <= 0 {
		l.MemMiB = d.MemMiB
	}
	if l.NoFile <= 0 {
		l.NoFile = d.NoFile
	}
	if l.NProc <= 0 {
		l.NProc = d.NProc
	}
	if l.FSizeMiB <= 0 {
		l.FSizeMiB = d.FSizeMiB
	}
	return l
}

// Tighten returns l lowered by the positive fields of r; a field of r above
// l's is ignored, so a request can never raise a limit.
func (l Limits) Tighten(r Limits) Limits {
	low := func(cur, req int) int {
		if req > 0 && req < cur {
			return req
		}
		return cur
	}
	return Limits{
		CPUSecs:  low(l.CPUSecs, r.CPUSecs),
		MemMiB:   low(l.MemMiB, r.MemMiB),
		NoFile:   low(l.NoFile, r.NoFile),
		NProc:    low(l.NProc, r.NProc),
		FSizeMiB: low(l.FSizeMiB, r.FSizeMiB),
	}
}

// Options configure tier selection and the tiers (typed from
// internal/config; this package never reads the environment).
type Options struct {
	// Tier forces a tier: "" (select), "native", "docker" or
	// "firecracker" (ECTO_SANDBOX_TIER).
	Tier string
	// DockerImage is ECTO_DOCKER_IMAGE; non-empty selects the container
	// tier.
	DockerImage string
	// FCBinary is ECTO_FC_BINARY; non-empty selects the microVM tier.
	FCBinary string
	// Permissive is ECTO_SANDBOX_PERMISSIVE=true: run with no OS
	// confinement, warn on every run, Status permissive.
	Permissive bool
	// Timeout is the wall-clock limit per command
	// (ECTO_SANDBOX_TIMEOUT_SECS); zero means DefaultTimeout.
	Timeout time.Duration
	// Limits are the native tiers' rlimits; zero fields take the defaults.
	Limits Limits
	// User is ECTO_SANDBOX_USER: when IronVise runs as root, the native
	// Linux tier switches to this user (a name or a numeric uid).
	User string
	// Hidden are absolute paths (files or directories) that no tier ever
	// shows a command: IronVise's data directory and the mandatory deny
	// list of credential stores, plus the operator's own entries. A tier
	// covers each one that exists with an empty read-only mount; a path
	// that contains the workspace makes every run abort.
	Hidden []string
	// HiddenResolved says Hidden already lists the real location of each
	// symlink among its paths, as resolved just now (secretpaths.Compute
	// made it): the native tier then keeps the list as it is when it
	// starts instead of resolving it a second time. Each command still
	// resolves the list again when it starts (HiddenPaths), and a target
	// that a link had when the list was made stays masked after the link
	// is re-pointed.
	HiddenResolved bool
	// ScratchMiB is ECTO_SANDBOX_SCRATCH_MIB: the size cap of the
	// per-command scratch tmpfs; zero means DefaultScratchMiB.
	ScratchMiB int
	// ContainerMode is ECTO_SANDBOX_CONTAINER_MODE=true: the native
	// Linux tier creates no namespaces and leaves the PID, mount and
	// network isolation to the container IronVise runs in
	// (docs/reference/sandboxing.md#inside-a-container). Only ever set
	// explicitly.
	ContainerMode bool
	// Container configures the Docker / Podman tier
	// (docs/design/sandbox.md#container-tier).
	Container ContainerOptions
	// MicroVM configures the Firecracker tier
	// (docs/design/sandbox.md#firecracker-tier).
	MicroVM MicroVMOptions
	// Logger receives warnings (permissive runs); nil discards them.
	Logger *slog.Logger
	// OneCommand says the process runs one command on this tier and
	// exits (a standalone `ironvise exec`): the native Linux tier starts
	// its launcher ahead, to overlap its start-up with the caller's, but
	// starts no replacement after the command, which would only compete
	// with the caller's last commit for the CPU and be killed at exit.
	OneCommand bool
	// Egress configures the egress proxy of proxy-mode runs
	// (Request.Egress).
	Egress EgressOptions
}

// EgressOptions configure the egress proxy that a tier serves for a
// proxy-mode command.
type EgressOptions struct {
	// Limits cap one command's connections, bytes and time; zero fields
	// take egress.DefaultLimits.
	Limits egress.Limits
	// Resolver resolves names for the proxy; nil is the system resolver.
	// Tests inject one to reach a test host by name.
	Resolver egress.Resolver
}

// ContainerOptions configure the Docker / Podman tier (ECTO_DOCKER_*,
// docs/design/sandbox.md#container-tier). The image is Options.DockerImage.
type ContainerOptions struct {
	// Runtime is ECTO_DOCKER_RUNTIME: "auto" (or ""), "docker" or "podman".
	Runtime string
	// Memory is ECTO_DOCKER_MEMORY as the runtime takes it ("256m") and
	// MemoryBytes its value; empty means DefaultContainerMemory.
	Memory      string
	MemoryBytes int64
	// CPUs is ECTO_DOCKER_CPUS ("1", "0.5"); empty means "1".
	CPUs string
	// Timeout is ECTO_DOCKER_TIMEOUT; zero means DefaultTimeout.
	Timeout time.Duration
	// ExtraArgs is ECTO_DOCKER_EXTRA_ARGS, already split into words.
	ExtraArgs []string
}

// MicroVMOptions configure the Firecracker tier (ECTO_FC_*,
// docs/design/sandbox.md#firecracker-tier). The VMM binary is
// Options.FCBinary.
type MicroVMOptions struct {
	// Kernel and Rootfs are ECTO_FC_KERNEL and ECTO_FC_ROOTFS; empty means
	// DefaultFCKernel and DefaultFCRootfs.
	Kernel, Rootfs string
	// VCPUs and MemMiB are ECTO_FC_VCPUS and ECTO_FC_MEM_MIB; zero means 1
	// and 128.
	VCPUs, MemMiB int
	// Timeout is ECTO_FC_TIMEOUT_SECS; zero means DefaultTimeout.
	Timeout time.Duration
}

// Defaults of the container and microVM tiers
// (docs/design/sandbox.md#container-tier,
// docs/design/sandbox.md#firecracker-tier).
const (
	DefaultContainerMemory = "256m"
	DefaultContainerCPUs   = "1"
	DefaultFCKernel        = "/opt/ectoledger/vmlinux"
	DefaultFCRootfs        = "/opt/ectoledger/rootfs.ext4"
	DefaultFCVCPUs         = 1
	DefaultFCMemMiB        = 128
)

// WithDefaults returns o with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	o.Limits = o.Limits.withDefaults()
	if o.ScratchMiB <= 0 {
		o.ScratchMiB = DefaultScratchMiB
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// EffectiveTimeout returns the wall-clock timeout for req under o.
func (o Options) EffectiveTimeout(req Request) time.Duration {
	t := o.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	if req.Timeout > 0 && req.Timeout < t {
		t = req.Timeout
	}
	return t
}

// Errors of this package, compared with errors.Is.
var (
	// ErrUnavailable means a tier cannot be applied on this host; the
	// wrapping error names what is missing and the fix.
	ErrUnavailable = errors.New("sandbox: tier unavailable")
	// ErrNotBuilt means the tier exists in the specification but is not
	// part of this build yet. It wraps ErrUnavailable.
	ErrNotBuilt = fmt.Errorf("%w: not built yet", ErrUnavailable)
	// ErrBadRequest means the request itself is malformed (empty command,
	// relative or missing workspace).
	ErrBadRequest = errors.New("sandbox: bad request")
	// ErrSelfTest means a tier's self-test found an enforcement missing.
	ErrSelfTest = errors.New("sandbox: self-test failed")
)

// UnavailableError explains why a tier cannot be applied and what fixes it.
// It unwraps to ErrUnavailable (and to the kernel or runtime error, if any).
type UnavailableError struct {
	Tier   TierName
	Reason string // what is missing, e.g. "Landlock is not enabled in this kernel"
	Fix    string // what to do, e.g. "boot with lsm=landlock,..."
	Err    error  // the underlying cause, may be nil
}

// Error implements error.
func (e *UnavailableError) Error() string {
	s := fmt.Sprintf("sandbox %s unavailable: %s", e.Tier, e.Reason)
	if e.Fix != "" {
		s += "; fix: " + e.Fix
	}
	if e.Err != nil && !errors.Is(e.Err, ErrUnavailable) {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap implements errors unwrapping to ErrUnavailable and the cause.
func (e *UnavailableError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrUnavailable, e.Err}
	}
	return []error{ErrUnavailable}
}

// ValidateRequest checks the fields every tier relies on.
func ValidateRequest(req Request) error {
	if req.Command == "" {
		return fmt.Errorf("%w: empty command", ErrBadRequest)
	}
	if !filepath.IsAbs(req.Workspace) {
		return fmt.Errorf("%w: workspace %q is not an absolute path", ErrBadRequest, req.Workspace)
	}
	for _, h := range req.Hidden {
		if !filepath.IsAbs(h) {
			return fmt.Errorf("%w: protected path %q is not an absolute path", ErrBadRequest, h)
		}
	}
	return nil
}

// ResolveWorkspace returns the workspace with its symlinks resolved, the
// name a tier confines and checks (a link to / or to a system directory is
// judged as what it leads to); it must be a directory.
func ResolveWorkspace(ws string) (string, error) {
	real, err := filepath.EvalSymlinks(ws)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(real); err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", ws, err)
	}
	return real, nil
}
