// Package microvm implements the Firecracker sandbox tier
// (docs/design/sandbox.md#firecracker-tier): every command runs in an
// ephemeral microVM that is destroyed afterwards.
//
// # A run
//
// For each command the tier writes, in a private temporary directory, the
// intent image (package guestproto: the intent JSON padded with NULs to a
// multiple of 512 bytes) and a Firecracker configuration, then starts
//
//	firecracker --no-api --config-file vm.json --log-path vmm.log --level Warning --id ironvise-…
//
// with the root filesystem attached read-only as /dev/vda, the intent image
// read-only as /dev/vdb, no network interface, ECTO_FC_VCPUS and
// ECTO_FC_MEM_MIB. The guest's serial console (/dev/ttyS0) is the VMM's
// stdout: the tier reads the guest init's framed result from it. There is
// no API socket to clean up; the directory is removed after every run.
//
//	tier, err := microvm.New(opts) // opts.FCBinary = "/usr/local/bin/firecracker"
//	res := tier.Run(ctx, sandbox.Request{Command: "uname -a", Workspace: dir})
//
// # Fail-closed
//
// No output, output without a result frame for this run (a rootfs that does
// not implement the guest protocol), a frame cut short or one that does not
// verify, a VMM that is missing, too old or fails: the action is aborted
// with the reason. ECTO_FC_TIMEOUT_SECS kills the VMM's process group; the
// guest enforces a slightly shorter timeout itself so that a slow command
// still reports its partial output.
//
// # Limitations
//
// Linux with KVM only. The command sees the guest's filesystem, not the
// workspace. The VMM runs with IronVise's privileges and without
// Firecracker's jailer; KVM is the isolation boundary. The kernel and rootfs
// digests are recomputed when a file's size or modification time changes,
// so an in-place rewrite that preserves both goes unnoticed until then.
package microvm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// Errors of this package, compared with errors.Is.
var (
	// ErrVMM means the Firecracker binary is missing, too old or failing.
	ErrVMM = errors.New("microvm: firecracker unusable")
)

// Settings without a variable of their own.
const (
	// MinVersionMajor and MinVersionMinor name the oldest Firecracker the
	// tier drives (--no-api with --config-file, the fields it writes).
	MinVersionMajor, MinVersionMinor = 1, 5
	// MaxSerialBytes is how much of the serial console is kept: the
	// largest frame (two streams of guestproto.KeepBytes, base64 twice)
	// plus boot messages.
	MaxSerialBytes = 4 << 20
	// bootArgs are the guest kernel's: the serial console, reboot through
	// the keyboard controller (Firecracker exits on it), panic → reboot,
	// no PCI scan, little kernel noise, and the guest init.
	bootArgs = "console=ttyS0 reboot=k panic=1 pci=off quiet loglevel=1 i8042.noaux i8042.nomux i8042.nopnp i8042.dumbkbd init=/init"
	// preflightTTL is how long a successful preflight is trusted.
	preflightTTL = time.Minute
)

// Tier is the Firecracker tier.
type Tier struct {
	opts    sandbox.Options
	log     *slog.Logger
	binary  string
	kernel  string
	rootfs  string
	vcpus   int
	memMiB  int
	timeout time.Duration
	// kvmDevice is /dev/kvm; the stand-in VMM tests replace it.
	kvmDevice string
	// tempDir is where each run's private directory is made.
	tempDir string

	mu      sync.Mutex
	cached  *preflight            // guarded by mu
	checked time.Time             // guarded by mu
	digests map[string]fileDigest // guarded by mu
}

// preflight is what a successful preflight found.
type preflight struct {
	version              string // "1.7.0"
	kernelSHA, rootfsSHA string
}

// fileDigest caches a file's SHA-256 for one size and modification time.
type fileDigest struct {
	size  int64
	mtime time.Time
	sum   string
}

// New returns the Firecracker tier for opts. Whether it can run here
// (binary, KVM, kernel, rootfs) is reported by Available and by each Run.
func New(opts sandbox.Options) (sandbox.Tier, error) {
	opts = opts.WithDefaults()
	if err := platformError(); err != nil {
		return sandbox.NewUnavailable(&sandbox.UnavailableError{Tier: sandbox.TierFirecracker,
			Reason: "Firecracker needs Linux with KVM", Fix: "use the container tier (ECTO_DOCKER_IMAGE) on this OS", Err: err}), nil
	}
	m := opts.MicroVM
	t := &Tier{
		opts: opts, log: opts.Logger, binary: opts.FCBinary,
		kernel: m.Kernel, rootfs: m.Rootfs, vcpus: m.VCPUs, memMiB: m.MemMiB, timeout: m.Timeout,
		kvmDevice: "/dev/kvm", tempDir: os.TempDir(), digests: map[string]fileDigest{},
	}
	if t.kernel == "" {
		t.kernel = sandbox.DefaultFCKernel
	}
	if t.rootfs == "" {
		t.rootfs = sandbox.DefaultFCRootfs
	}
	if t.vcpus <= 0 {
		t.vcpus = sandbox.DefaultFCVCPUs
	}
	if t.memMiB <= 0 {
		t.memMiB = sandbox.DefaultFCMemMiB
	}
	if t.timeout <= 0 {
		t.timeout = sandbox.DefaultTimeout
	}
	return t, nil
}

// Name implements sandbox.Tier.
func (t *Tier) Name() sandbox.TierName { return sandbox.TierFirecracker }

// SelfTest implements sandbox.Tier: a command boots a microVM, reports
// through the guest protocol, runs unprivileged and cannot write its
// working directory or the root filesystem. (The workspace checks of
// sandbox.SelfTest do not apply: the VM has no workspace.)
func (t *Tier) SelfTest(ctx context.Context) error {
	if err := t.Available(ctx); err != nil {
		return err
	}
	ws, err := os.MkdirTemp("", "ironvise-selftest-")
	if err != nil {
		return fmt.Errorf("%w: create workspace: %w", sandbox.ErrSelfTest, err)
	}
	defer os.RemoveAll(ws)
	r := t.Run(ctx, sandbox.Request{Workspace: ws, Timeout: min(t.timeout, 60*time.Second),
		Command: `for f in ./selftest-write /selftest-write; do if (echo x > "$f") 2>/dev/null; then echo "WRITABLE $f"; fi; done; echo "uid=$(id -u)"; echo ironvise-selftest`})
	switch {
	case r.Status != sandbox.StatusOK:
		return fmt.Errorf("%w: firecracker: %s", sandbox.ErrSelfTest, r.Headline())
	case r.ExitCode == nil || *r.ExitCode != 0 || !strings.Contains(r.Stdout, "ironvise-selftest"):
		return fmt.Errorf("%w: firecracker: the probe command failed: %s", sandbox.ErrSelfTest, oneLine(r.Observation()))
	case strings.Contains(r.Stdout, "WRITABLE"):
		return fmt.Errorf("%w: firecracker: the guest's root filesystem or working directory is writable: %s", sandbox.ErrSelfTest, oneLine(r.Stdout))
	case strings.Contains(r.Stdout, "uid=0\n"):
		return fmt.Errorf("%w: firecracker: the command ran as root in the guest", sandbox.ErrSelfTest)
	}
	return nil
}

func (t *Tier) unavailable(reason, fix string, err error) *sandbox.UnavailableError {
	return &sandbox.UnavailableError{Tier: sandbox.TierFirecracker, Reason: reason, Fix: fix, Err: err}
}

// Compile-time check.
var _ sandbox.Tier = (*Tier)(nil)
