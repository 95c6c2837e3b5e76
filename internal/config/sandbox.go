package config

import (
	"net/netip"

	"github.com/ironvise/ironvise/internal/egress"
)

// Sandbox configures command confinement (docs/design/sandbox.md).
type Sandbox struct {
	// Permissive is ECTO_SANDBOX_PERMISSIVE=true: run without OS
	// confinement, warn on every action and record it. Development only.
	Permissive bool
	// Tier is ECTO_SANDBOX_TIER: "" (select automatically), native,
	// docker or firecracker.
	Tier string
	// TimeoutSecs is ECTO_SANDBOX_TIMEOUT_SECS, the wall-clock limit of a
	// command (default 30).
	TimeoutSecs int
	// CPUSecs, MemMiB and NoFile are ECTO_SANDBOX_CPU_SECS (default 30),
	// ECTO_SANDBOX_MEM_MIB (address space, default 512) and
	// ECTO_SANDBOX_NOFILE (default 64): the native tier's rlimits.
	CPUSecs int
	MemMiB  int
	NoFile  int
	// ScratchMiB is ECTO_SANDBOX_SCRATCH_MIB (default 256): the size cap
	// of the per-command scratch tmpfs (sandboxing.md).
	ScratchMiB int
	// User is ECTO_SANDBOX_USER: when IronVise runs as root, the native
	// Linux tier runs commands as this user (a name or a numeric uid).
	User string
	// ContainerMode is ECTO_SANDBOX_CONTAINER_MODE=true: the native Linux
	// tier creates no namespaces and leaves that isolation to the
	// container IronVise runs in (sandboxing.md#inside-a-container).
	ContainerMode bool
	// Network is the sandbox network of commands
	// (docs/reference/sandboxing.md#network-egress).
	Network Network
	// Workspace is ECTO_SANDBOX_WORKSPACE: WorkspaceRO (default) or
	// WorkspaceOverlay (docs/reference/sandboxing.md#overlay-workspaces).
	Workspace string
	// DockerImage is ECTO_DOCKER_IMAGE and FCBinary is ECTO_FC_BINARY;
	// setting them selects the tier (docs/design/sandbox.md#tier-selection).
	DockerImage string
	FCBinary    string
	// Docker configures the container tier
	// (docs/design/sandbox.md#container-tier).
	Docker Docker
	// Firecracker configures the microVM tier
	// (docs/design/sandbox.md#firecracker-tier).
	Firecracker Firecracker
}

// The values of ECTO_SANDBOX_WORKSPACE.
const (
	// WorkspaceRO: commands see the workspace read-only (the default).
	WorkspaceRO = "ro"
	// WorkspaceOverlay: commands write into a per-session overlay above
	// the workspace; the real files change only on apply.
	WorkspaceOverlay = "overlay"
)

// The values of ECTO_SANDBOX_NETWORK.
const (
	// NetworkNone: a command has no network at all (the default).
	NetworkNone = "none"
	// NetworkProxy: a command reaches the allowed domains through
	// IronVise's egress proxy, and nothing else.
	NetworkProxy = "proxy"
)

// Network is the ECTO_SANDBOX_NETWORK configuration.
type Network struct {
	// Mode is ECTO_SANDBOX_NETWORK: NetworkNone (default) or NetworkProxy.
	Mode string
	// AllowedDomains is ECTO_SANDBOX_ALLOWED_DOMAINS parsed by
	// egress.ParseDomains: exact host names or "*.name".
	AllowedDomains []string
	// AllowCIDRs is ECTO_SANDBOX_EGRESS_ALLOW_CIDRS parsed by
	// egress.ParseCIDRs: the opt-in for destinations the address rules
	// refuse (private, loopback, metadata ranges).
	AllowCIDRs []netip.Prefix
}

// Proxy reports whether commands get the egress proxy.
func (n Network) Proxy() bool { return n.Mode == NetworkProxy }

// loadNetwork reads the three variables. A list given while the mode is
// none, or proxy mode with nothing to reach, is an error rather than a
// setting that silently does nothing.
func loadNetwork(r *reader) Network {
	n := Network{Mode: r.enum("ECTO_SANDBOX_NETWORK", NetworkNone, NetworkNone, NetworkProxy)}
	if s, ok := r.get("ECTO_SANDBOX_ALLOWED_DOMAINS"); ok {
		d, err := egress.ParseDomains(s)
		if err != nil {
			r.fail("ECTO_SANDBOX_ALLOWED_DOMAINS", s, err.Error(), "exact host names or *.name, separated by commas")
		}
		n.AllowedDomains = d
	}
	if s, ok := r.get("ECTO_SANDBOX_EGRESS_ALLOW_CIDRS"); ok {
		c, err := egress.ParseCIDRs(s)
		if err != nil {
			r.fail("ECTO_SANDBOX_EGRESS_ALLOW_CIDRS", s, err.Error(), "address ranges such as 10.0.0.0/8, separated by commas")
		}
		n.AllowCIDRs = c
	}
	switch {
	case n.Mode != NetworkProxy && (len(n.AllowedDomains) > 0 || len(n.AllowCIDRs) > 0):
		r.fail("ECTO_SANDBOX_NETWORK", n.Mode, "ECTO_SANDBOX_ALLOWED_DOMAINS or ECTO_SANDBOX_EGRESS_ALLOW_CIDRS is set, but commands get no network in this mode", "proxy, to let commands reach the listed hosts through the egress proxy")
	case n.Mode == NetworkProxy && len(n.AllowedDomains) == 0 && len(n.AllowCIDRs) == 0:
		r.fail("ECTO_SANDBOX_ALLOWED_DOMAINS", "", "ECTO_SANDBOX_NETWORK=proxy with no allowed domain or address range: the proxy would refuse every connection", "the hosts commands may reach, e.g. pypi.org,*.github.com")
	}
	return n
}

// Docker is the ECTO_DOCKER_* configuration of the container tier.
type Docker struct {
	// Runtime is ECTO_DOCKER_RUNTIME: auto (default), docker or podman.
	Runtime string
	// Memory is ECTO_DOCKER_MEMORY, normalised to lower case ("256m"), and
	// MemoryBytes its value in bytes.
	Memory      string
	MemoryBytes int64
	// CPUs is ECTO_DOCKER_CPUS ("1", "0.5").
	CPUs string
	// TimeoutSecs is ECTO_DOCKER_TIMEOUT, the wall-clock limit per command.
	TimeoutSecs int
	// ExtraArgs is ECTO_DOCKER_EXTRA_ARGS split into words like a POSIX
	// shell would (quotes and backslashes; no expansion, nothing executed).
	ExtraArgs []string
}

// Firecracker is the ECTO_FC_* configuration of the microVM tier.
type Firecracker struct {
	// Kernel and Rootfs are ECTO_FC_KERNEL and ECTO_FC_ROOTFS.
	Kernel, Rootfs string
	// VCPUs and MemMiB are ECTO_FC_VCPUS and ECTO_FC_MEM_MIB.
	VCPUs, MemMiB int
	// TimeoutSecs is ECTO_FC_TIMEOUT_SECS.
	TimeoutSecs int
}

// Defaults of the native tier (docs/design/sandbox.md#linux-native-tier).
const (
	DefaultSandboxTimeoutSecs = 30
	DefaultSandboxCPUSecs     = 30
	DefaultSandboxMemMiB      = 512
	DefaultSandboxNoFile      = 64
	DefaultSandboxScratchMiB  = 256
	// MaxSandboxScratchMiB is ECTO_SANDBOX_SCRATCH_MIB's upper bound.
	MaxSandboxScratchMiB = 65536
)

// Defaults of the container and microVM tiers
// (docs/design/sandbox.md#container-tier,
// docs/design/sandbox.md#firecracker-tier).
const (
	DefaultDockerRuntime     = "auto"
	DefaultDockerMemory      = "256m"
	DefaultDockerCPUs        = "1"
	DefaultDockerTimeoutSecs = 30
	DefaultFCKernel          = "/opt/ectoledger/vmlinux"
	DefaultFCRootfs          = "/opt/ectoledger/rootfs.ext4"
	DefaultFCVCPUs           = 1
	DefaultFCMemMiB          = 128
	DefaultFCTimeoutSecs     = 30
)

func loadSandbox(r *reader) Sandbox {
	var s Sandbox
	// Only the two documented spellings, exactly: a typo such as "ture"
	// or a padded " true" must not silently mean either mode.
	s.Permissive = r.switchVar("ECTO_SANDBOX_PERMISSIVE", false, wordsTrueFalse)
	s.Tier = r.enum("ECTO_SANDBOX_TIER", "", "native", "docker", "firecracker")
	s.TimeoutSecs, _ = r.intRange("ECTO_SANDBOX_TIMEOUT_SECS", DefaultSandboxTimeoutSecs, 1, 86400)
	s.CPUSecs, _ = r.intRange("ECTO_SANDBOX_CPU_SECS", DefaultSandboxCPUSecs, 1, 86400)
	// Below 16 MiB not even /bin/sh starts; the upper bound is 1 TiB.
	s.MemMiB, _ = r.intRange("ECTO_SANDBOX_MEM_MIB", DefaultSandboxMemMiB, 16, 1<<20)
	// A shell needs a handful of descriptors for its pipes and redirections.
	s.NoFile, _ = r.intRange("ECTO_SANDBOX_NOFILE", DefaultSandboxNoFile, 8, 1<<20)
	// The scratch tmpfs lives in memory: 64 GiB is more than a single
	// command's scratch should ever hold, and below 1 MiB nothing fits.
	s.ScratchMiB, _ = r.intRange("ECTO_SANDBOX_SCRATCH_MIB", DefaultSandboxScratchMiB, 1, MaxSandboxScratchMiB)
	s.User = r.str("ECTO_SANDBOX_USER", "")
	// Strictly true or false: it hands isolation to the container, and
	// a typo must not decide that either way.
	s.ContainerMode = r.switchVar("ECTO_SANDBOX_CONTAINER_MODE", false, wordsTrueFalse)
	s.Network = loadNetwork(r)
	// Strictly ro or overlay (case-insensitive): a typo must not decide
	// whether commands may write.
	s.Workspace = r.enum("ECTO_SANDBOX_WORKSPACE", WorkspaceRO, WorkspaceRO, WorkspaceOverlay)
	s.DockerImage = r.str("ECTO_DOCKER_IMAGE", "")
	s.FCBinary = r.absPath("ECTO_FC_BINARY", "")
	s.Docker = loadDocker(r)
	s.Firecracker = loadFirecracker(r)
	return s
}
