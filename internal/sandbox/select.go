package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// Factories builds the tiers this binary contains. The composition root
// (internal/cli) fills it, so this package does not import the tier
// packages. A nil factory is a tier that is not built yet.
type Factories struct {
	// Native builds the native tier of the host OS (sandbox/native).
	Native func(Options) (Tier, error)
	// Container builds the Docker / Podman tier.
	Container func(Options) (Tier, error)
	// MicroVM builds the Firecracker tier.
	MicroVM func(Options) (Tier, error)
}

// Select picks the tier of docs/design/sandbox.md#tier-selection:
// ECTO_FC_BINARY set → Firecracker; else ECTO_DOCKER_IMAGE set →
// Docker/Podman; else the native tier of the host OS. opts.Tier forces one
// explicitly. With opts.Permissive the command runs with no confinement (tier
// "none").
//
// Select returns an error only for options it cannot act on (an unknown
// forced tier, a factory that rejects its configuration). A tier that is
// selected but cannot be applied on this host is still returned: its
// Available and SelfTest report why, and its Run aborts every command. That
// way a forced or configured tier never silently becomes a weaker one, and
// each aborted action is still recorded.
func Select(opts Options, f Factories) (Tier, error) {
	opts = opts.WithDefaults()
	if opts.Permissive {
		return NewPermissive(opts), nil
	}
	kind := opts.Tier
	if kind == "" {
		switch {
		case opts.FCBinary != "":
			kind = "firecracker"
		case opts.DockerImage != "":
			kind = "docker"
		default:
			kind = "native"
		}
	}
	var (
		build func(Options) (Tier, error)
		name  TierName
	)
	switch kind {
	case "native":
		build, name = f.Native, NativeTierName(runtime.GOOS)
	case "docker":
		build, name = f.Container, TierDocker
	case "firecracker":
		build, name = f.MicroVM, TierFirecracker
	default:
		return nil, fmt.Errorf("sandbox: select tier %q: unknown tier (accepted: native, docker, firecracker)", kind)
	}
	if build == nil {
		return NewUnavailable(&UnavailableError{Tier: name, Reason: "this tier is not built yet",
			Fix: "unset ECTO_SANDBOX_TIER, ECTO_DOCKER_IMAGE and ECTO_FC_BINARY to use the native tier", Err: ErrNotBuilt}), nil
	}
	t, err := build(opts)
	if err != nil {
		return nil, fmt.Errorf("sandbox: select tier %s: %w", name, err)
	}
	return t, nil
}

// NativeTierName is the tier name of the native tier on goos.
func NativeTierName(goos string) TierName {
	switch goos {
	case "linux":
		return TierNativeLinux
	case "darwin":
		return TierNativeDarwin
	case "windows":
		return TierNativeWindows
	}
	return TierName("native-" + goos)
}

// Unavailable is a tier that cannot be applied: every Run aborts with the
// reason, Available and SelfTest return it.
type Unavailable struct {
	err *UnavailableError
}

// NewUnavailable returns a tier that reports err for everything.
func NewUnavailable(err *UnavailableError) *Unavailable { return &Unavailable{err: err} }

// Name implements Tier.
func (u *Unavailable) Name() TierName { return u.err.Tier }

// Available implements Tier.
func (u *Unavailable) Available(context.Context) error { return u.err }

// Run implements Tier: it never runs the command.
func (u *Unavailable) Run(_ context.Context, _ Request) Result {
	return Aborted(u.err.Tier, u.err.Error(), 0)
}

// SelfTest implements Tier.
func (u *Unavailable) SelfTest(context.Context) error { return u.err }
