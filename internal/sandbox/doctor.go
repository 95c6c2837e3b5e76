package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Guarantee names of docs/design/sandbox.md#guarantee-names, in report order.
const (
	GFSWorkspaceReadonly = "fs_workspace_readonly"
	// GFSOverlayIsolated is overlay mode
	// (docs/reference/sandboxing.md#overlay-workspaces): a command run in
	// it writes, deletes and renames through the workspace, everything
	// lands in its own layer, and the real workspace stays unchanged. Not
	// applicable on a tier that refuses overlay-mode runs.
	GFSOverlayIsolated    = "fs_overlay_isolated"
	GFSOutsideWriteDenied = "fs_outside_write_denied"
	GFSOutsideReadDenied  = "fs_outside_read_denied"
	GNetTCPDenied         = "net_tcp_denied"
	GNetUDPDenied         = "net_udp_denied"
	GUnixSocketsDenied    = "unix_sockets_denied"
	GUnixDatagramDenied   = "unix_datagram_denied"
	GNetNamespace         = "net_namespace"
	// GNetProxyOnly is proxy mode (docs/reference/sandboxing.md#network-egress):
	// a command run in it has loopback alone, reaches an opted-in host
	// through the egress proxy, and nothing directly. Not applicable on a
	// tier that refuses proxy-mode runs.
	GNetProxyOnly    = "net_proxy_only"
	GProtectedHidden = "protected_paths_hidden"
	GScratchCapped   = "scratch_capped"
	GScratchCleanup  = "scratch_cleanup"
	GPtraceDenied    = "ptrace_denied"
	GSignalsScoped   = "signals_scoped"
	GLimitCPU        = "limit_cpu"
	GLimitMemory     = "limit_memory"
	GLimitFDs        = "limit_fds"
	GLimitProcesses  = "limit_processes"
	GCapsDropped     = "caps_dropped"
	GNoNewPrivs      = "no_new_privs"
	GNoSurvivors     = "no_survivors"
)

// GuaranteeNames lists the guarantees in report order.
func GuaranteeNames() []string {
	return []string{GFSWorkspaceReadonly, GFSOverlayIsolated, GFSOutsideWriteDenied, GFSOutsideReadDenied, GProtectedHidden,
		GNetTCPDenied, GNetUDPDenied, GNetNamespace, GNetProxyOnly, GUnixSocketsDenied, GUnixDatagramDenied, GPtraceDenied,
		GSignalsScoped, GLimitCPU, GLimitMemory, GLimitFDs, GLimitProcesses, GScratchCapped, GScratchCleanup,
		GCapsDropped, GNoNewPrivs, GNoSurvivors}
}

// State is how a guarantee holds on this host.
type State string

// The states of docs/design/sandbox.md#guarantee-names.
const (
	StateEnforced      State = "enforced"
	StateNotEnforced   State = "not_enforced"
	StateNotApplicable State = "not_applicable"
	// StateDelegated is a guarantee IronVise leaves to the container it
	// runs in (the native Linux tier's container mode); the evidence
	// says what the container must provide.
	StateDelegated State = "delegated"
)

// Delegating is implemented by a tier that can leave part of the isolation
// to the container IronVise runs in: the native Linux tier in container
// mode (ECTO_SANDBOX_CONTAINER_MODE=true).
type Delegating interface {
	// DelegatesToContainer reports whether the tier runs commands in
	// IronVise's own PID, mount and network namespaces.
	DelegatesToContainer() bool
}

// delegates reports whether t runs in container mode.
func delegates(t Tier) bool {
	d, ok := t.(Delegating)
	return ok && d.DelegatesToContainer()
}

// Guarantee is one probed guarantee.
type Guarantee struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	// Evidence is what the probe saw, e.g. "socket: Operation not
	// permitted".
	Evidence string `json:"evidence"`
	// Probed is false when no probe tool was available in the sandbox and
	// the state comes from the tier's design rather than an attempt.
	Probed bool `json:"probed"`
}

// TierReport is doctor's finding for one tier.
type TierReport struct {
	Tier      TierName `json:"tier"`
	Selected  bool     `json:"selected"`
	Available bool     `json:"available"`
	// Problem says why the tier is unusable and the fix.
	Problem    string      `json:"problem,omitempty"`
	Enforced   *Enforced   `json:"enforced,omitempty"`
	Guarantees []Guarantee `json:"guarantees,omitempty"`
	// Notes are known limits of the tier on this host.
	Notes []string `json:"notes,omitempty"`
}

// Usable reports whether the tier can run commands.
func (r TierReport) Usable() bool { return r.Available && r.Problem == "" }

// SelfTest runs a small command through t and checks that it ran confined:
// Status ok, the enforcement record present, a workspace file readable and
// the workspace not writable. It is what `ironvise serve` runs before it
// listens.
func SelfTest(ctx context.Context, t Tier) error {
	if err := t.Available(ctx); err != nil {
		return err
	}
	ws, err := os.MkdirTemp("", "ironvise-selftest-")
	if err != nil {
		return fmt.Errorf("%w: create workspace: %w", ErrSelfTest, err)
	}
	defer os.RemoveAll(ws)
	if err := os.Chmod(ws, 0o755); err != nil {
		return fmt.Errorf("%w: chmod workspace: %w", ErrSelfTest, err)
	}
	if err := os.WriteFile(filepath.Join(ws, "selftest.txt"), []byte("ironvise-selftest\n"), 0o644); err != nil {
		return fmt.Errorf("%w: write workspace file: %w", ErrSelfTest, err)
	}
	r := t.Run(ctx, Request{
		Command:   "cat selftest.txt; if (echo x > selftest-write) 2>/dev/null; then echo WORKSPACE-WRITABLE; fi",
		Workspace: ws, Timeout: 10 * time.Second,
	})
	switch {
	case r.Status != StatusOK:
		return fmt.Errorf("%w: %s: %s", ErrSelfTest, t.Name(), r.Headline())
	case r.Enforced == nil:
		return fmt.Errorf("%w: %s: no enforcement recorded", ErrSelfTest, t.Name())
	case r.ExitCode == nil || *r.ExitCode != 0 || !strings.Contains(r.Stdout, "ironvise-selftest"):
		return fmt.Errorf("%w: %s: the probe command failed: %s", ErrSelfTest, t.Name(), oneLine(r.Observation()))
	case strings.Contains(r.Stdout, "WORKSPACE-WRITABLE"):
		return fmt.Errorf("%w: %s: the workspace is writable from inside the sandbox", ErrSelfTest, t.Name())
	}
	if _, err := os.Stat(filepath.Join(ws, "selftest-write")); err == nil {
		return fmt.Errorf("%w: %s: a file appeared in the workspace", ErrSelfTest, t.Name())
	}
	return nil
}

// Doctor probes t from inside real sandboxed children and reports every
// guarantee of docs/design/sandbox.md#guarantee-names. It uses /bin/sh and
// coreutils, plus perl or bash for the socket and ptrace attempts when the
// host has them (never a Go program: the address-space cap stops Go
// runtimes). It takes a few seconds: the CPU, memory and process limits are
// exceeded for real, with lowered per-request limits.
func Doctor(ctx context.Context, t Tier, selected bool) TierReport {
	rep := TierReport{Tier: t.Name(), Selected: selected}
	if err := t.Available(ctx); err != nil {
		rep.Problem = err.Error()
		return rep
	}
	rep.Available = true
	if t.Name() == TierNativeWindows {
		rep.Guarantees, rep.Notes = windowsGuarantees()
		return rep
	}
	p, err := newProber(t)
	if err != nil {
		rep.Problem = err.Error()
		return rep
	}
	defer p.close()
	rep.Guarantees, rep.Enforced, err = p.run(ctx)
	if err != nil {
		rep.Problem = err.Error()
	}
	rep.Notes = tierNotes(t.Name(), rep.Enforced)
	if d, ok := t.(LauncherDescriber); ok {
		rep.Notes = append(rep.Notes, "launcher: "+d.Launcher())
	}
	if p.container {
		rep.Notes = append(rep.Notes,
			"container mode: the command shares the container's PID, mount and network namespaces; the guarantees marked delegated hold only as far as the container provides them",
			"container mode: run IronVise's container with a pids limit (podman's default is 2048; docker run --pids-limit): RLIMIT_NPROC does not bind root of the initial user namespace")
	}
	return rep
}

// LauncherDescriber is a tier that starts each command from a launcher
// program of its own (the native Linux tier) and says which one, for the
// doctor.
type LauncherDescriber interface {
	Launcher() string
}

// tierNotes are the documented limits worth repeating in doctor.
func tierNotes(name TierName, e *Enforced) []string {
	switch name {
	case TierNativeLinux:
		as := DefaultMemMiB
		if e != nil && e.RLimits != nil {
			as = e.RLimits.ASMiB
		}
		return []string{
			fmt.Sprintf("the %d MiB address-space cap stops Go, JVM and Node.js programs from starting (\"failed to reserve page summary memory\"); raise ECTO_SANDBOX_MEM_MIB for them", as),
			"rlimits are per process: use the container or microVM tier for an aggregate memory limit",
		}
	case TierDocker, TierPodman:
		return []string{
			"the container shares the host kernel: use the Firecracker tier for untrusted workloads",
			"the workspace is mounted read-only at /workspace and must be readable by uid 65534 (the command runs as 65534:65534 whatever the image's /etc/passwd says)",
			"no perl or bash in a minimal image means the socket and ptrace probes are not attempted; --network=none and --cap-drop ALL hold regardless",
		}
	case TierFirecracker:
		return []string{
			"the command sees the guest's filesystem, not the workspace: it starts in the rootfs's empty, read-only /workspace",
			"the VMM runs without Firecracker's jailer, with IronVise's privileges; KVM is the boundary",
		}
	case TierNativeDarwin:
		return []string{
			"no resource limits on macOS (Seatbelt has none)",
			"Xcode command-line shims such as /usr/bin/git do not run under the profile; use a Homebrew git",
			"`ls ..` from the workspace is refused; only the command loses network access, not IronVise",
		}
	}
	return nil
}

// windowsGuarantees is the Windows Job Object tier's design
// (docs/design/sandbox.md#windows-tier): there is no POSIX shell to probe
// with.
func windowsGuarantees() ([]Guarantee, []string) {
	g := func(name string, s State, ev string) Guarantee { return Guarantee{Name: name, State: s, Evidence: ev} }
	return []Guarantee{
		g(GFSWorkspaceReadonly, StateNotEnforced, "no file restriction beyond NTFS permissions"),
		g(GFSOverlayIsolated, StateNotApplicable, "overlay mode is not supported on this tier yet: overlay-mode runs are aborted"),
		g(GFSOutsideWriteDenied, StateNotEnforced, "no file restriction beyond NTFS permissions"),
		g(GFSOutsideReadDenied, StateNotEnforced, "no file restriction beyond NTFS permissions"),
		g(GNetTCPDenied, StateNotEnforced, "no network restriction"),
		g(GNetUDPDenied, StateNotEnforced, "no network restriction"),
		g(GUnixSocketsDenied, StateNotEnforced, "no syscall filtering"),
		g(GUnixDatagramDenied, StateNotEnforced, "no syscall filtering"),
		g(GNetNamespace, StateNotEnforced, "the command uses the host's network"),
		g(GNetProxyOnly, StateNotApplicable, "proxy mode is not supported on this tier yet: proxy-mode runs are aborted"),
		g(GProtectedHidden, StateNotEnforced, "no file restriction beyond NTFS permissions"),
		g(GScratchCapped, StateNotEnforced, "the scratch folder is an ordinary folder on the host's disk"),
		g(GScratchCleanup, StateNotApplicable, "not probed on Windows"),
		g(GPtraceDenied, StateNotApplicable, "no ptrace on Windows"),
		g(GSignalsScoped, StateNotApplicable, "no POSIX signals on Windows"),
		g(GLimitCPU, StateEnforced, "Job Object per-process user time limit"),
		g(GLimitMemory, StateEnforced, "Job Object job memory limit"),
		g(GLimitFDs, StateNotEnforced, "no handle limit"),
		g(GLimitProcesses, StateEnforced, "Job Object active process limit"),
		g(GCapsDropped, StateNotEnforced, "the command runs with IronVise's token"),
		g(GNoNewPrivs, StateNotApplicable, "no setuid on Windows"),
		g(GNoSurvivors, StateEnforced, "JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE"),
	}, []string{"Windows restricts no files and filters no system calls: use the Docker tier in production (ECTO_DOCKER_IMAGE)"}
}

// prober holds the fixtures of one doctor run.
type prober struct {
	t         Tier
	container bool   // the tier runs in container mode (Delegating)
	base      string // fixture root, outside every sandbox root
	ws        string // the probe workspace
	outside   string // a world-writable directory outside the workspace
	secret    string // a world-readable file outside the roots
	secretTxt string
	marker    string // unique token for the survivor probe
	tcp       net.Listener
	udp       net.PacketConn
	abstract  net.Listener
	pathSock  net.Listener
	sockPath  string
	dgram     net.PacketConn // a host datagram socket the command can name
	dgramPath string
	protected string // a protected directory inside the probe workspace
	protTxt   string
	abstractN string
	closers   []io.Closer
}

func newProber(t Tier) (*prober, error) {
	p := &prober{t: t, container: delegates(t)}
	var err error
	if p.base, err = os.MkdirTemp("", "ironvise-doctor-"); err != nil {
		return nil, fmt.Errorf("doctor: create fixtures: %w", err)
	}
	fail := func(err error) (*prober, error) {
		p.close()
		return nil, fmt.Errorf("doctor: create fixtures: %w", err)
	}
	tok := randomToken()
	p.ws = filepath.Join(p.base, "workspace")
	p.outside = filepath.Join(p.base, "outside")
	p.secret = filepath.Join(p.base, "secret.txt")
	p.secretTxt = "ironvise-doctor-secret-" + tok
	// A number sleep accepts (a hex marker would make sleep refuse to
	// start, and the survivor probe could never fail).
	n, _ := strconv.ParseUint(tok[:8], 16, 64)
	p.marker = "300." + strconv.FormatUint(n, 10)
	// The fixtures are readable and writable for everyone, so a denial
	// can only come from the sandbox, not from file permissions.
	for _, d := range []string{p.base, p.ws, p.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail(err)
		}
		mode := os.FileMode(0o755)
		if d == p.outside {
			mode = 0o777
		}
		if err := os.Chmod(d, mode); err != nil {
			return fail(err)
		}
	}
	if err := os.WriteFile(p.secret, []byte(p.secretTxt+"\n"), 0o644); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(p.ws, "README"), []byte("probe workspace\n"), 0o644); err != nil {
		return fail(err)
	}
	if p.tcp, err = net.Listen("tcp4", "127.0.0.1:0"); err != nil {
		return fail(err)
	}
	p.closers = append(p.closers, p.tcp)
	if p.udp, err = net.ListenPacket("udp4", "127.0.0.1:0"); err != nil {
		return fail(err)
	}
	p.closers = append(p.closers, p.udp)
	if runtime.GOOS == "linux" {
		p.abstractN = "ironvise-doctor-" + tok
		if p.abstract, err = net.Listen("unix", "@"+p.abstractN); err != nil {
			return fail(err)
		}
		p.closers = append(p.closers, p.abstract)
	}
	p.sockPath = filepath.Join(p.ws, "probe.sock")
	if p.pathSock, err = net.Listen("unix", p.sockPath); err != nil {
		return fail(err)
	}
	p.closers = append(p.closers, p.pathSock)
	_ = os.Chmod(p.sockPath, 0o777)
	if runtime.GOOS != "windows" {
		p.dgramPath = filepath.Join(p.ws, "probe.dgram")
		if p.dgram, err = net.ListenPacket("unixgram", p.dgramPath); err != nil {
			return fail(err)
		}
		p.closers = append(p.closers, p.dgram)
		_ = os.Chmod(p.dgramPath, 0o777)
	}
	// A protected directory inside the workspace, as ~/.ssh is inside a
	// home workspace: the run hides it through Request.Hidden.
	p.protected = filepath.Join(p.ws, ".ironvise-protected")
	p.protTxt = "ironvise-doctor-protected-" + tok
	if err := os.MkdirAll(p.protected, 0o755); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(p.protected, "key"), []byte(p.protTxt+"\n"), 0o644); err != nil {
		return fail(err)
	}
	return p, nil
}

func (p *prober) close() {
	for _, c := range p.closers {
		_ = c.Close()
	}
	// overlayfs leaves its work directory's own with mode 000.
	_ = os.Chmod(filepath.Join(p.base, "overlay", "work", "work"), 0o700)
	_ = os.RemoveAll(p.base)
}

func randomToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// shq quotes s for the POSIX shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
