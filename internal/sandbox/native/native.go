// Package native implements the native sandbox tier of each host OS
// (docs/design/sandbox.md#linux-native-tier and
// docs/design/sandbox.md#macos-tier and docs/design/sandbox.md#windows-tier):
// Landlock + seccomp-BPF + rlimits on Linux, a Seatbelt profile on macOS, Job
// Objects on Windows.
//
// # Linux
//
// Go cannot run code between fork and exec, and the Go runtime is
// multithreaded, so the tier re-executes the ironvise binary itself
// (/proc/self/exe) as a small launcher (package launch) in fresh PID and
// mount namespaces, plus a user namespace when IronVise lacks
// CAP_SYS_ADMIN (a normal user, or root in a container). The launcher is
// dispatched before any other work of the binary: from package
// early's initialisation in cmd/ironvise, and again at the very start of
// cli.Run ([IsLauncher] / [LauncherMain]) for binaries that do not import
// early. The launcher, in order:
//
//  1. marks every inherited descriptor above 2 close-on-exec;
//  2. setsid (no controlling terminal: TIOCSTI has nothing to inject into),
//     then builds its mount view: no propagation to the host, sensitive
//     files such as /etc/shadow masked, a /proc of its own PID namespace,
//     everything read-only and nosuid except the scratch directory — this
//     covers what Landlock does not govern (chmod, chown, utimes, xattrs);
//  3. sets no_new_privs, drops every capability set including the bounding
//     set, locks the securebits, and switches to ECTO_SANDBOX_USER if set;
//  4. applies the rlimits (the address-space cap last, just before exec,
//     so the Go launcher itself never runs under it);
//  5. applies Landlock with every feature of the running ABI;
//  6. installs the seccomp allowlist with TSYNC;
//  7. execs /bin/sh -c <command> in the workspace with the scrubbed
//     environment.
//
// Any failure is written to the parent over a close-on-exec pipe as a
// structured error and the action is aborted. The command runs as PID 1 of
// its namespace: when it exits, or when the wall-clock timeout kills it, the
// kernel kills every process left in the namespace, setsid'd grandchildren
// included, and the parent's wait returns only once they are gone.
//
// Container mode (sandbox.Options.ContainerMode) creates no namespaces: the
// process started is a child subreaper (launch.ReaperArg) that starts the
// launcher, which skips step 2's mount view (Landlock grants /etc around
// its secrets; the tier refuses a run that could reach a protected path,
// and, for a command running as IronVise's uid, uses the ownerless seccomp
// profile against chmod and the like) and needs Landlock ABI 6 for the
// scoping that stands in for the PID and network namespaces. The reaper
// kills every descendant left when the command ends or times out
// (docs/reference/sandboxing.md#inside-a-container).
//
//	tier, err := native.New(opts)
//	res := tier.Run(ctx, sandbox.Request{Command: "make test", Workspace: dir})
//
// # Self-confinement
//
// A process of IronVise's own that handles attacker-influenced data — the
// guard worker, which reads the agent's goal and intent and talks to a
// model API (docs/design/agent.md#guard-worker) — confines itself before it
// starts work with [ConfineSelf]. On Linux that applies, to every thread and
// irreversibly: no_new_privs; a Landlock ruleset that handles every right of
// the kernel's ABI and grants only reading a short list of paths
// ([HTTPSClient]: DNS configuration, CA certificates, zoneinfo), so nothing
// can be written, created or executed anywhere and nothing else read, TCP
// (and at ABI ≥ 10 UDP) bind is denied, and signals and abstract Unix sockets
// cannot leave the process (ABI ≥ 6); then seccomp's HTTPS-client allowlist
// with TSYNC: no execve, no new processes (clone for threads only), no ptrace
// or process_vm_*, no mount, unshare or setns, no bpf, perf, io_uring or
// keyrings, sockets only for IPv4/IPv6 TCP and UDP, signals only to
// itself, EPERM for everything else.
//
// TCP connect and UDP send stay open: the worker must reach the model API
// named in its configuration, through DNS, and neither Landlock (ports
// only) nor seccomp (no view of addresses) could confine that to one
// host. Files the process needs beyond the profile (a mock script, its
// configuration) must be read before ConfineSelf.
//
//	c, err := native.ConfineSelf(native.HTTPSClient())
//	if err != nil {
//		return err // refuse to serve unconfined
//	}
//
// Elsewhere ConfineSelf fails with an error wrapping errors.ErrUnsupported,
// unless the caller asks for [Profile.BestEffort]: the guard worker does,
// because the guard must work on macOS and Windows too, and logs that it
// runs unconfined there.
//
// # Limitations
//
// Linux needs Landlock (5.13+), seccomp, and the right to create PID and
// mount namespaces (CAP_SYS_ADMIN, or user namespaces), or container mode
// with Landlock ABI 6. The rlimits are
// per process, not per sandbox: many processes can together use more memory
// than the address-space cap; use the container or microVM tier for
// aggregate limits. As uid 0 the process-count backstop relies on the
// PID namespace's pid_max (Linux 6.14+), since RLIMIT_NPROC does not apply
// to root. The 512 MiB address-space cap stops Go, JVM and Node.js programs
// from starting. macOS enforces no resource limits; Windows restricts no
// files and filters no syscalls. A self-confined process keeps its user
// and capabilities (Landlock binds root too, and the calls through which
// capabilities matter are outside its allowlist); Landlock grants by
// inode, so a granted file replaced afterwards (resolv.conf rewritten by a
// DHCP client) can no longer be read: the guard worker, one per session,
// then fails closed until the next session starts a new one.
package native

import "github.com/ironvise/ironvise/internal/sandbox/native/launch"

// LauncherArg is the hidden argv[1] that makes the ironvise binary act as
// the sandbox launcher.
const LauncherArg = launch.Arg

// IsLauncher reports whether args (os.Args) ask for the launcher.
func IsLauncher(args []string) bool {
	return launch.IsLauncher(args)
}

// LauncherMain runs the launcher. On success it does not return: the process
// becomes the sandboxed command. Otherwise it returns the exit code for
// main to exit with.
func LauncherMain(args []string) int {
	return launch.Main(args)
}
