package session

import (
	"context"
	"log/slog"
	"time"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/demo"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/callerenv"
	"github.com/ironvise/ironvise/internal/sandbox/container"
	"github.com/ironvise/ironvise/internal/sandbox/microvm"
	"github.com/ironvise/ironvise/internal/sandbox/native"
	"github.com/ironvise/ironvise/internal/scan"
)

// NewLLM returns the primary model client LLM_BACKEND selects. The mock
// backend without MOCK_LLM_SCRIPT plays the demo's built-in script, so
// every front end runs the same offline session.
func NewLLM(c config.LLM, log *slog.Logger) (llm.Client, error) {
	return llm.New(c, llm.Options{Logger: log, BuiltinScript: demo.Script()})
}

// NewScanner returns the output scanner at sensitivity
// (SCANNER_SENSITIVITY).
func NewScanner(sensitivity string) (*scan.Scanner, error) {
	sens, err := scan.ParseSensitivity(sensitivity)
	if err != nil {
		return nil, err
	}
	return scan.New(sens)
}

// TierFactories are the sandbox tiers built into this binary. The
// container tier's constructor may ask the Docker daemon whether it
// answers, so it takes ctx.
func TierFactories(ctx context.Context) sandbox.Factories {
	return sandbox.Factories{
		Native: native.New,
		Container: func(o sandbox.Options) (sandbox.Tier, error) {
			return container.New(ctx, o)
		},
		MicroVM: microvm.New,
	}
}

// TierOptions converts the configuration into the sandbox's typed
// options. tier, when non-empty, overrides ECTO_SANDBOX_TIER.
func TierOptions(c config.Sandbox, tier string, log *slog.Logger) sandbox.Options {
	if tier == "" {
		tier = c.Tier
	}
	return sandbox.Options{
		Tier: tier, DockerImage: c.DockerImage, FCBinary: c.FCBinary, Permissive: c.Permissive,
		Timeout: time.Duration(c.TimeoutSecs) * time.Second,
		Limits:  sandbox.Limits{CPUSecs: c.CPUSecs, MemMiB: c.MemMiB, NoFile: c.NoFile},
		User:    c.User, Logger: log, ScratchMiB: c.ScratchMiB, ContainerMode: c.ContainerMode,
		Container: sandbox.ContainerOptions{
			Runtime: c.Docker.Runtime, Memory: c.Docker.Memory, MemoryBytes: c.Docker.MemoryBytes,
			CPUs: c.Docker.CPUs, Timeout: time.Duration(c.Docker.TimeoutSecs) * time.Second,
			ExtraArgs: c.Docker.ExtraArgs,
		},
		MicroVM: sandbox.MicroVMOptions{
			Kernel: c.Firecracker.Kernel, Rootfs: c.Firecracker.Rootfs,
			VCPUs: c.Firecracker.VCPUs, MemMiB: c.Firecracker.MemMiB,
			Timeout: time.Duration(c.Firecracker.TimeoutSecs) * time.Second,
		},
	}
}

// PermissiveReport is the doctor's report of ECTO_SANDBOX_PERMISSIVE=true,
// made without probing: nothing is confined, by design, so every
// guarantee is reported not enforced.
func PermissiveReport() sandbox.TierReport {
	r := sandbox.TierReport{Tier: sandbox.TierNone, Selected: true, Available: true,
		Notes: []string{"ECTO_SANDBOX_PERMISSIVE=true: commands run WITHOUT OS confinement; development only"}}
	for _, n := range sandbox.GuaranteeNames() {
		r.Guarantees = append(r.Guarantees, sandbox.Guarantee{Name: n, State: sandbox.StateNotEnforced, Evidence: "permissive mode"})
	}
	return r
}

// SandboxEnv is the candidate environment of sandboxed commands: the
// allowlisted variables of look only (package callerenv, which exec's
// thin client calls too, so a daemon exec gets the same list). Anything
// else (API keys, tokens) stays out of the sandbox.
func SandboxEnv(look config.Lookup) []string { return callerenv.Candidates(look) }
