// Package launch is the launcher half of the native Linux sandbox tier: the
// code that runs in the re-executed ironvise binary between the tier's
// clone and the exec of /bin/sh -c <command>
// (docs/design/sandbox.md#linux-native-tier). The tier half, which builds the
// [Spec] and reads the [Status] records, is package sandbox/native.
//
// # Why a package of its own
//
// Every package the launcher imports is initialised before it runs, and
// the launcher runs once per command. Keeping it apart from the tier lets
// it depend on nothing but the kernel wrappers, go-landlock and strconv
// (its wire formats are plain text, see [Spec.Args]): none of the checks,
// the ledger, the LLM clients or their regular expressions and tables are
// initialised in a launcher process (see package early, which dispatches
// it before any of them).
//
// # The launch
//
// The parent starts the launcher in fresh PID, mount and network
// namespaces (plus a user namespace when IronVise lacks CAP_SYS_ADMIN), or,
// in container mode, in IronVise's own under a reaper ([ReaperArg]), before it
// knows the command, with a close-on-exec status pipe as descriptor
// [StatusFD], a specification pipe as [SpecFD], a Unix socket for the
// egress proxy's listener as [ProxyFD], and the command's stdout
// and stderr pipes as 1 and 2. The launcher is then kept ready: its clone,
// exec and Go start-up (package early dispatches it) are done when it
// writes [Ready] to the status pipe and blocks reading its specification.
// A launcher told that its namespaces are fresh ones of its own
// ([NamespacesArg]) first does there what no command changes: its mount
// tree made a slave of the host's and loopback brought up (step 2's first
// parts; a failure is reported at its step, once the specification came).
// When a command comes, the parent writes that command's [Spec] framed
// ([Frame]) and keeps the pipe open. A launcher takes exactly one
// specification, and everything that confines the command comes from it;
// nothing before it depends on the command. (A specification given as
// arguments after [Arg] is used at once.) The launcher, in order:
//
//  0. reads the specification;
//  1. marks every inherited descriptor above 2 close-on-exec;
//  2. setsid, brings up loopback and, in proxy mode ([Spec.Proxy]), listens
//     on 127.0.0.1:[ProxyPort] and hands the socket to the parent over
//     [ProxyFD]; then builds its mount view (no propagation to the host,
//     secrets under /etc masked, a /proc of its own PID namespace,
//     everything read-only and nosuid except the scratch directory);
//     container mode skips the mount view (Landlock grants /etc around
//     those secrets instead);
//  3. sets no_new_privs, drops every capability set including the bounding
//     set, locks the securebits, and switches user if asked;
//  4. applies the rlimits (the address-space cap last, just before exec);
//  5. applies Landlock with every feature of the running ABI to the launch
//     thread, the one that execs the command;
//  6. installs the parent's seccomp program with TSYNC, after checking its
//     hash;
//  7. reads back from the kernel what it applied (seccomp mode,
//     no_new_privs, capabilities, Landlock, the network);
//  8. waits for [Start] on [SpecFD] and closes it: the parent confines the
//     command while it commits the command's intent to the ledger, and
//     lets it start only once that commit is durable. A pipe closed
//     without [Start] (the commit failed, the run was withdrawn, the
//     parent died) ends the launch at [StepStart], before anything of the
//     command runs;
//  9. writes an [Applied] record and execs /bin/sh -c <command>, or the
//     command's argument vector directly when the parent sent one.
//
// Any failure is written as a [SetupError] record and the launcher exits
// with [ExitFailed]; the status pipe closes at exec, which is how the parent
// tells a started command from a failed launch.
//
//	if launch.IsLauncher(os.Args) {
//		os.Exit(launch.Main(os.Args))
//	}
//
// # Limitations
//
// Linux only: elsewhere [Main] prints why and returns [ExitFailed]. The
// wire types are internal to one ironvise binary (the parent re-executes
// itself), so they carry no version.
package launch

import (
	"sync/atomic"
	"syscall"
)

// Arg is the hidden argv[1] that makes the ironvise binary act as the
// sandbox launcher.
const Arg = "__ironvise-sandbox-launcher"

// Env returns the whole environment of a launcher's process (and of the
// reaper's): nothing of IronVise's (the command's comes with the
// specification). One P keeps its thread count low, which makes the
// all-thread Landlock and seccomp synchronisation quick. The memory
// profiler off from the runtime's start: setting MemProfileRate in the
// launcher's code (launcherMain does, for the address-space cap) comes
// after the runtime and the packages' initialisation have allocated, and
// the sampled allocations among them cost the stack walks and buckets of
// a profile nobody reads (about 1 ms of a launcher's 7–9 ms of CPU before
// its specification, docs/operate/performance-log.md#exec-2026-12-04-morning).
func Env() []string { return []string{"GOMAXPROCS=1", "GODEBUG=memprofilerate=0"} }

// StatusFD is the launcher's status pipe: the parent's ExtraFiles[0].
const StatusFD = 3

// SpecFD is the pipe a ready launcher reads its specification from: the
// parent's ExtraFiles[1].
const SpecFD = 4

// Start is the byte the parent writes on [SpecFD], after the framed
// specification, when the command may run (step 8 above).
const Start = 'g'

// ProxyFD is a Unix stream socket, the parent's ExtraFiles[2], on which a
// launcher in proxy mode ([Spec.Proxy]) hands the parent the listening
// socket of the egress proxy (SCM_RIGHTS). Every launcher gets one, as it
// is started before its command is known; in mode none it is never used
// and closes at exec like every inherited descriptor.
const ProxyFD = 5

// ProxyPort is the port of the egress proxy inside the command's network
// namespace, on 127.0.0.1 (docs/reference/sandboxing.md#network-egress).
// It is fixed, so that a command's environment and the documentation
// agree; the namespace is the command's alone, so no other listener can
// hold it.
const ProxyPort = 3128

// NamespacesArg, as the argument after [Arg], tells a launcher started
// without a specification that the parent made fresh mount and network
// namespaces for it: it prepares them before it writes [Ready] (see the
// package documentation). Without it (container mode, or the launcher left
// in IronVise's network namespace) nothing happens before the
// specification.
const NamespacesArg = "namespaces"

// Ready is what a launcher started without a specification writes to
// the status pipe once it waits for one on SpecFD, before any status
// record.
const Ready = "ready\n"

// ExitFailed is the launcher's exit code when it could not apply the
// sandbox (the parent reads the reason from the status pipe).
const ExitFailed = 125

// CheckArg, as the only argument of the launcher program (package
// launcherbin/launcher), makes it print CheckReply and exit: the tier's
// proof that the program it embeds runs here.
const CheckArg = "--check"

// CheckReply is the launcher program's answer to CheckArg.
const CheckReply = "ironvise sandbox launcher"

// IsLauncher reports whether args (os.Args) ask for the launcher.
func IsLauncher(args []string) bool {
	dispatches.Store(true)
	return len(args) >= 2 && args[1] == Arg
}

// dispatches is set once the process has asked IsLauncher.
var dispatches atomic.Bool

// Dispatches reports whether this process checked its arguments for [Arg]
// (called IsLauncher), so that re-executing it runs the launcher and not
// the program again. The tier starts a launcher ahead of its command only
// then: a binary that never dispatches (a test binary without the TestMain
// hook) would otherwise run its whole self again for each ready launcher.
func Dispatches() bool { return dispatches.Load() }

// Main runs the launcher with os.Args. On success it does not return: the
// process becomes the sandboxed command. Otherwise it returns the exit code
// for the process to exit with.
func Main(args []string) int {
	return launcherMain(args)
}

// Spec is what the parent tells the launcher (on SpecFD, see [Spec.Encode],
// or as the arguments after Arg, see [Spec.Args]).
type Spec struct {
	Command string
	// Argv, when set, is Command's argument vector as /bin/sh would
	// build it (shell.SimpleArgv): the launcher execs it directly,
	// searching PATH as the shell would, and runs /bin/sh -c Command
	// whenever that exec fails, so that a missing program, a script
	// without #! and every other error come out exactly as the shell's.
	Argv      []string
	Workspace string
	Scratch   string
	Env       []string
	Limits    Limits
	// TimerSlackNS, when not 0, is the timer slack the command gets, in
	// nanoseconds: the launcher was started with a coarser one (package
	// timerslack) and gives this back to its thread, which becomes the
	// command (step 4).
	TimerSlackNS uint64
	// UID and GID, when SwitchUser, are the user to become
	// (ECTO_SANDBOX_USER).
	SwitchUser bool
	UID        int
	GID        int
	// UserNS says the launcher runs in a user namespace of its own (the
	// parent lacks CAP_SYS_ADMIN).
	UserNS bool
	// Container is container mode (ECTO_SANDBOX_CONTAINER_MODE): the
	// launcher runs in IronVise's namespaces, under a reaper (see
	// [ReaperArg]), and confines the command with Landlock (ABI 6 or
	// newer), seccomp, rlimits and dropped privileges only; the
	// container IronVise runs in provides the PID, mount and network
	// isolation.
	Container bool
	// Seccomp is the filter program (seccomp.Profile.Bytes), built once by
	// the parent; SeccompSHA256 is its hash, checked before install.
	Seccomp       []byte
	SeccompSHA256 string
	// Hide are absolute paths covered with an empty read-only mount
	// (directories) or /dev/null (files) in the command's mount namespace:
	// IronVise's data directory and the credential stores of
	// sandbox.Options.Hidden. Parents must come before their children.
	Hide []string
	// ScratchMiB caps the scratch tmpfs (bytes); its inode cap is
	// ScratchInodesPerMiB times this.
	ScratchMiB int
	// Proxy is proxy mode (sandbox.Request.Egress): after bringing up
	// loopback, the launcher listens on 127.0.0.1:[ProxyPort] in the
	// command's network namespace, hands the listening socket to the
	// parent over [ProxyFD] and closes its own copy, so that the command
	// can connect to the proxy and never accept on it; Landlock (ABI 4 or
	// newer) allows TCP connect to that port only. The parent sends the
	// matching seccomp program (seccomp.BuildProxy). Refused in container
	// mode, which has no network namespace of its own.
	Proxy bool
	// Inject is a test hook: step name → errno that step's kernel call
	// returns instead of being made; [InjectSkip] instead skips the call
	// and reports success, standing for a kernel that accepted a request
	// without enforcing it (what the final verification must catch). It
	// can only make a launch fail.
	Inject map[string]int
	// Overlay, when set, is overlay mode (sandbox.Request.Overlay): the
	// launcher mounts an overlayfs on the workspace in the command's
	// mount namespace, before the masks, and Landlock lets the command
	// change what lies beneath it. Refused in container mode, which has
	// no mount namespace of its own.
	Overlay *Overlay
}

// Overlay is the layer stack of an overlay-mode launch, as the tier
// checked it (see the tier's checkOverlay): absolute directories, none
// inside another or the workspace, none holding a ',', ':' or '\\' (the
// separators of overlayfs's mount options).
type Overlay struct {
	// Layers are the earlier layers, newest first, stacked above the
	// workspace.
	Layers []string
	// Upper and Work are the command's layer and overlayfs's work
	// directory.
	Upper, Work string
}

// InjectSkip, as a Spec.Inject value, skips the step's kernel call and
// reports success.
const InjectSkip = -1

// What the launcher's read-back before exec confirms, as recorded in
// Applied.Verified.
const (
	VerifiedSeccomp    = "seccomp"
	VerifiedNoNewPrivs = "no_new_privs"
	VerifiedCaps       = "capabilities"
	VerifiedLandlock   = "landlock"
	VerifiedNetwork    = "network"
	// VerifiedOverlay: in overlay mode, the workspace is a writable
	// overlayfs.
	VerifiedOverlay = "overlay"
)

// ScratchInodesPerMiB is the scratch tmpfs's inode cap per MiB of size: a
// command cannot exhaust kernel memory with millions of empty files, while
// an unpacked package tree (tens of thousands of small files) still fits.
const ScratchInodesPerMiB = 256

// Limits are the resource limits to apply (sandbox.Limits).
type Limits struct {
	CPUSecs  int
	MemMiB   int
	NoFile   int
	NProc    int
	FSizeMiB int
}

// Status is one line the launcher writes to the status pipe (see
// [Status.Marshal]).
type Status struct {
	Applied *Applied
	Error   *SetupError
	// Outcome is the reaper's last record in container mode: how the
	// command ended, written once none of its processes is left.
	Outcome *Outcome
}

// Outcome is how a command run under the reaper ended: its exit code, or
// the signal that killed it, and how many processes outlived it and were
// killed.
type Outcome struct {
	Exit   int
	Signal int
	Killed int
}

// Applied is what the launcher put in force, written just before exec.
type Applied struct {
	LandlockABI   int
	SeccompSHA256 string
	RLimits       RLimits
	UID           int
	CapEffective  uint64
	CapPermitted  uint64
	NoNewPrivs    bool
	PidMax        int
	Namespaces    []string
	// ScratchMiB and ScratchInodes are the caps of the scratch tmpfs.
	ScratchMiB    int
	ScratchInodes int
	// Hidden counts the paths of Spec.Hide that existed and were masked.
	Hidden int
	// Verified lists what the final check before exec confirmed from the
	// kernel's own view (see the verify step).
	Verified []string
	// Overlay is, in overlay mode, the options the workspace's overlayfs
	// was mounted with, without its directories ("" otherwise).
	Overlay string
	// Exec is how the command is started: ExecArgv or ExecShell. When
	// the direct exec of an argv fails, a second record with ExecShell
	// follows before the shell runs; the last record counts.
	Exec string
}

// The values of Applied.Exec (and of the sandbox_result's exec_mode).
const (
	ExecArgv  = "argv"
	ExecShell = "shell"
)

// RLimits are the soft limits actually set (sandbox.RLimits).
type RLimits struct {
	CPUSecs  int
	ASMiB    int
	NoFile   int
	NProc    int
	FSizeMiB int
}

// SetupError is a launcher failure: which step, the errno if any, and the
// fix the operator should apply.
type SetupError struct {
	Step    string
	Errno   int
	Message string
	Fix     string
}

// Error implements error.
func (e *SetupError) Error() string {
	s := e.Step + ": " + e.Message
	if e.Errno != 0 {
		s += " (" + syscall.Errno(e.Errno).Error() + ")"
	}
	if e.Fix != "" {
		s += "; fix: " + e.Fix
	}
	return s
}

// Launcher steps, as named in SetupError.Step and in Spec.Inject.
const (
	StepSpec     = "spec"
	StepFDs      = "fd_sweep"
	StepSetsid   = "setsid"
	StepMounts   = "mounts"
	StepPidMax   = "pid_max"
	StepNNP      = "no_new_privs"
	StepCaps     = "capabilities"
	StepUser     = "user"
	StepRlimits  = "rlimits"
	StepLandlock = "landlock"
	StepSeccomp  = "seccomp"
	StepNetwork  = "network"
	StepHide     = "hide"
	StepScratch  = "scratch"
	StepVerify   = "verify"
	StepExec     = "exec"
	StepReaper   = "reaper"
	StepProxy    = "proxy"
	StepOverlay  = "overlay"
	StepStart    = "start"
)

// ContainerFix is the fix named when IronVise in a container cannot build
// the command's namespaces.
const ContainerFix = "if IronVise runs in a container, either allow the namespaces it needs (podman run --security-opt unmask=ALL; docker run --security-opt systempaths=unconfined --security-opt seccomp=unconfined, untested) or set ECTO_SANDBOX_CONTAINER_MODE=true to let the container provide the PID, mount and network isolation (docs/reference/sandboxing.md#inside-a-container)"

// ContainerModeLandlockABI is the Landlock ABI container mode needs: TCP
// rules (4) and the scoping of signals and abstract Unix sockets (6)
// stand in for the namespaces it does without.
const ContainerModeLandlockABI = 6

// LandlockFix is the fix named when the kernel has no usable Landlock.
const LandlockFix = "use Linux 5.13 or newer built with CONFIG_SECURITY_LANDLOCK=y and list landlock in the lsm= boot parameter (for example lsm=landlock,lockdown,yama,apparmor,bpf), or set ECTO_DOCKER_IMAGE to use the container tier"
