package cli

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/session"
)

// sandboxTier selects the configured tier
// (docs/design/sandbox.md#tier-selection). Commands that run intents (exec,
// audit, serve) use it; serve calls SelfTest on the result before it listens.
func (a *app) sandboxTier(tierFlag string) (sandbox.Tier, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	protect, err := a.tierProtection(cfg)
	if err != nil {
		return nil, err
	}
	opts := session.TierOptions(cfg.Sandbox, tierFlag, slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	// The tier hides exactly the paths the tripwire refuses, so a command
	// cannot read what an intent naming the path directly would be denied.
	opts.Hidden, opts.HiddenResolved = protect.Paths, true
	opts.OneCommand = a.oneCommand
	t, err := sandbox.Select(opts, session.TierFactories(a.ctx))
	if err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	return t, nil
}

func (a *app) sandboxCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Inspect the sandbox tiers",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(a.sandboxDoctorCommand())
	return cmd
}

// doctorReport is the JSON of `ironvise sandbox doctor --json`.
type doctorReport struct {
	Selected   sandbox.TierName     `json:"selected"`
	Permissive bool                 `json:"permissive"`
	Usable     bool                 `json:"usable"`
	Tiers      []sandbox.TierReport `json:"tiers"`
	// GuardEnclaves says which guard enclave levels this build supports
	// (docs/enclaves.md).
	GuardEnclaves []enclave.Support `json:"guard_enclaves"`
}

func (a *app) sandboxDoctorCommand() *cobra.Command {
	var (
		asJSON bool
		tier   string
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Probe what each sandbox tier enforces on this host",
		Long: `Probe the sandbox from inside real sandboxed children: write the workspace,
write outside it, read outside the allowed roots, open TCP, UDP and Unix sockets,
ptrace, signal IronVise, exceed the CPU, memory, descriptor and process limits,
and leave background processes behind. Each guarantee is reported as enforced,
not_enforced or not_applicable, with the evidence.

For the container tier, availability means the runtime (docker or podman)
answers and the image is present locally; for the Firecracker tier, that /dev/kvm
opens, the binary is Firecracker 1.5 or newer and the kernel and rootfs are there.
The probes then run in real containers or microVMs. The other tiers are listed
with their availability only.

Exits 1 when the selected tier cannot be used here, naming the fix.`,
		Example: `  ironvise sandbox doctor
  ironvise sandbox doctor --json
  ironvise sandbox doctor --tier docker
  ECTO_FC_BINARY=/usr/local/bin/firecracker ironvise sandbox doctor`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch tier {
			case "", "native", "docker", "firecracker":
			default:
				return usageError(fmt.Errorf("--tier %q: unknown tier (accepted: native, docker, firecracker)", tier))
			}
			cfg, err := a.config()
			if err != nil {
				return err
			}
			selected, err := a.sandboxTier(tier)
			if err != nil {
				return err
			}
			defer sandbox.CloseTier(selected)
			rep := doctorReport{Selected: selected.Name(), Permissive: cfg.Sandbox.Permissive, GuardEnclaves: enclave.Supports()}
			if cfg.Sandbox.Permissive {
				rep.Tiers = append(rep.Tiers, session.PermissiveReport())
			} else {
				rep.Tiers = append(rep.Tiers, sandbox.Doctor(a.ctx, selected, true))
			}
			rep.Usable = rep.Tiers[0].Usable()
			if tier == "" {
				// The other tiers: availability only (probing every tier
				// would run containers and VMs).
				for _, kind := range []string{"native", "docker", "firecracker"} {
					opts := session.TierOptions(cfg.Sandbox, kind, nil)
					if a.protect != nil {
						opts.Hidden, opts.HiddenResolved = a.protect.Paths, true
					}
					t, err := sandbox.Select(opts, session.TierFactories(a.ctx))
					if err != nil {
						// A configuration the tier rejects (e.g. an
						// ECTO_DOCKER_EXTRA_ARGS flag) is a finding too.
						rep.Tiers = append(rep.Tiers, sandbox.TierReport{Tier: kindTier(kind), Problem: err.Error()})
						continue
					}
					if t.Name() == selected.Name() {
						sandbox.CloseTier(t)
						continue
					}
					tr := sandbox.TierReport{Tier: t.Name(), Available: true}
					if err := t.Available(a.ctx); err != nil {
						tr.Available, tr.Problem = false, err.Error()
					}
					sandbox.CloseTier(t)
					rep.Tiers = append(rep.Tiers, tr)
				}
			}
			if asJSON {
				if err := a.printJSON(rep); err != nil {
					return err
				}
			} else {
				printDoctor(a.stdout, rep)
			}
			if !rep.Usable {
				return exitCode(ExitDenied, fmt.Errorf("sandbox tier %s is not usable on this host: %s", rep.Selected, rep.Tiers[0].Problem))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	cmd.Flags().StringVar(&tier, "tier", "", "probe this tier instead of the selected one: native, docker or firecracker")
	return cmd
}

// kindTier names the tier of an ECTO_SANDBOX_TIER value for a report.
func kindTier(kind string) sandbox.TierName {
	switch kind {
	case "docker":
		return sandbox.TierDocker
	case "firecracker":
		return sandbox.TierFirecracker
	}
	return sandbox.NativeTierName(runtime.GOOS)
}

// printDoctor writes the human-readable report.
func printDoctor(w io.Writer, rep doctorReport) {
	defer printEnclaves(w, rep.GuardEnclaves)
	for i, t := range rep.Tiers {
		if i == 1 {
			fmt.Fprintln(w, "\nother tiers:")
		}
		if i > 0 {
			state := "available"
			if !t.Usable() {
				state = "unavailable: " + t.Problem
			}
			fmt.Fprintf(w, "  %-14s %s\n", t.Tier, state)
			continue
		}
		state := "usable"
		if !t.Usable() {
			state = "NOT USABLE: " + t.Problem
		}
		fmt.Fprintf(w, "selected tier: %s (%s)\n", t.Tier, state)
		if e := t.Enforced; e != nil {
			fmt.Fprintf(w, "  in force: %s\n", describeEnforced(e))
		}
		if len(t.Guarantees) > 0 {
			fmt.Fprintln(w)
		}
		for _, g := range t.Guarantees {
			ev := g.Evidence
			if !g.Probed && g.State != sandbox.StateNotApplicable {
				ev = "(not probed) " + ev
			}
			fmt.Fprintf(w, "  %-14s %-24s %s\n", g.State, g.Name, ev)
		}
		if len(t.Notes) > 0 {
			fmt.Fprintln(w, "\nnotes:")
			for _, n := range t.Notes {
				fmt.Fprintf(w, "  - %s\n", n)
			}
		}
	}
}

// describeEnforced is the one-line summary of an enforcement record.
func describeEnforced(e *sandbox.Enforced) string {
	var parts []string
	if e.LandlockABI != nil {
		parts = append(parts, fmt.Sprintf("Landlock ABI %d", *e.LandlockABI))
	}
	if e.SeccompProfileSHA256 != "" {
		parts = append(parts, "seccomp profile "+e.SeccompProfileSHA256[:min(12, len(e.SeccompProfileSHA256))])
	}
	if r := e.RLimits; r != nil {
		parts = append(parts, fmt.Sprintf("rlimits cpu %d s, address space %d MiB, nofile %d, nproc %d, fsize %d MiB",
			r.CPUSecs, r.ASMiB, r.NoFile, r.NProc, r.FSizeMiB))
	}
	if e.PidMax != nil {
		parts = append(parts, fmt.Sprintf("pid_max %d", *e.PidMax))
	}
	if e.UID != nil {
		parts = append(parts, fmt.Sprintf("uid %d", *e.UID))
	}
	if e.Capabilities != "" {
		parts = append(parts, "capabilities "+e.Capabilities)
	}
	if len(e.Namespaces) > 0 {
		parts = append(parts, "namespaces "+strings.Join(e.Namespaces, ", "))
	}
	container := e.Isolation == sandbox.IsolationContainer
	if container {
		parts = append(parts, "container mode: no namespaces of its own")
	}
	if e.Network != "" {
		parts = append(parts, "network "+e.Network)
	}
	if sc := e.Scratch; sc != nil && !container {
		parts = append(parts, fmt.Sprintf("scratch tmpfs %d MiB, %d inodes", sc.MiB, sc.Inodes))
	} else if container {
		parts = append(parts, "scratch directory "+e.ScratchDir+" (no tmpfs)")
	}
	if e.HiddenPaths != nil {
		parts = append(parts, fmt.Sprintf("protected paths masked: %d", *e.HiddenPaths))
	}
	if len(e.Verified) > 0 {
		parts = append(parts, "verified before exec: "+strings.Join(e.Verified, ", "))
	}
	if e.Runtime != "" {
		parts = append(parts, strings.TrimSpace(e.Runtime+" "+e.RuntimeVersion))
	}
	if e.Image != "" {
		parts = append(parts, "image "+e.Image+" ("+e.ImageDigest+")")
	}
	if c := e.Container; c != nil {
		parts = append(parts, fmt.Sprintf("memory %d MiB, cpus %s, pids %d, ulimit cpu %d s, nofile %d, /tmp %d MiB",
			c.MemoryBytes>>20, c.CPUs, c.PidsLimit, c.CPUSecs, c.NoFile, c.TmpfsMiB))
		if len(c.ExtraArgs) > 0 {
			parts = append(parts, "site flags "+strings.Join(c.ExtraArgs, " "))
		}
	}
	if v := e.VM; v != nil {
		parts = append(parts, fmt.Sprintf("%d vCPU, %d MiB", v.VCPUs, v.MemMiB))
	}
	if e.VMKernelSHA256 != "" {
		parts = append(parts, "kernel "+e.VMKernelSHA256[:min(12, len(e.VMKernelSHA256))]+", rootfs "+e.VMRootfsSHA256[:min(12, len(e.VMRootfsSHA256))])
	}
	return strings.Join(parts, "; ")
}

// printEnclaves writes the guard enclave levels of the doctor's report.
func printEnclaves(w io.Writer, levels []enclave.Support) {
	if len(levels) == 0 {
		return
	}
	fmt.Fprintln(w, "\nguard enclaves (GUARD_ENCLAVE):")
	for _, l := range levels {
		state := "supported"
		if !l.Supported {
			state = "NOT SUPPORTED"
		}
		fmt.Fprintf(w, "  %-9s %-14s %s: %s\n", l.Level, state, l.Name, l.Note)
	}
}
