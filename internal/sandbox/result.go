package sandbox

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ironvise/ironvise/internal/egress"
)

// Status is the outcome of one run (docs/design/sandbox.md#fail-closed).
type Status string

// The statuses of a sandbox_result.
const (
	// StatusOK: the command ran confined; it may still have failed.
	StatusOK Status = "ok"
	// StatusAborted: the tier could not be applied; the command did not run.
	StatusAborted Status = "aborted"
	// StatusPermissive: ECTO_SANDBOX_PERMISSIVE=true; the command ran with
	// no OS confinement.
	StatusPermissive Status = "permissive"
	// StatusTimeout: the wall-clock timeout killed the command's process tree.
	StatusTimeout Status = "timeout"
)

// Result is the sandbox_result payload
// (docs/design/sandbox.md#sandbox-result). Its JSON field names are fixed;
// absent values encode as null.
type Result struct {
	Tier   TierName
	Status Status
	// Reason is a one-line explanation for aborted, permissive and timeout.
	Reason string
	// ExitCode is the command's exit code; nil when it was killed by a
	// signal or never ran.
	ExitCode *int
	// Signal is the name of the terminating signal ("SIGKILL"), or "".
	Signal string
	// Duration is the wall-clock time of the run.
	Duration time.Duration
	// Limit is the wall-clock limit a timed-out run exceeded (status
	// timeout): the observation names it, not the measured duration,
	// which a loaded machine stretches past it.
	Limit time.Duration
	// Stdout and Stderr are the captured streams, each capped
	// (docs/design/checks.md#scanner-pipeline) with a truncation marker when
	// cut.
	Stdout, Stderr                   string
	StdoutTruncated, StderrTruncated bool
	// Enforced is what was actually in force; nil when nothing was.
	Enforced *Enforced
	// ExecMode is how the command was started: ExecArgv (its argument
	// vector executed directly) or ExecShell (/bin/sh -c); "" when it
	// never ran (docs/reference/sandboxing.md#exec-mode).
	ExecMode string
	// Egress holds one record per connection the command opened through
	// the egress proxy, allowed or refused, in the order they ended
	// (proxy mode only). The caller records each as an egress event.
	Egress []egress.Record
}

// The values of Result.ExecMode.
const (
	ExecArgv  = "argv"
	ExecShell = "shell"
)

// Enforced records what a tier actually enforced for one run
// (docs/design/sandbox.md#sandbox-result). Only the fields that apply to the
// tier are set.
type Enforced struct {
	LandlockABI          *int     `json:"landlock_abi,omitempty"`
	SeccompProfileSHA256 string   `json:"seccomp_profile_sha256,omitempty"`
	RLimits              *RLimits `json:"rlimits,omitempty"`
	UID                  *int     `json:"uid,omitempty"`
	// Capabilities is "none" or the hex mask of the effective set.
	Capabilities string `json:"capabilities,omitempty"`
	NoNewPrivs   *bool  `json:"no_new_privs,omitempty"`
	// Network is "none", "host" or "proxy" (only loopback, whose one
	// exit is the egress proxy).
	Network        string `json:"network,omitempty"`
	ScratchDir     string `json:"scratch_dir,omitempty"`
	Runtime        string `json:"runtime,omitempty"`
	RuntimeVersion string `json:"runtime_version,omitempty"`
	Image          string `json:"image,omitempty"`
	ImageDigest    string `json:"image_digest,omitempty"`
	VMKernelSHA256 string `json:"vm_kernel_sha256,omitempty"`
	VMRootfsSHA256 string `json:"vm_rootfs_sha256,omitempty"`

	// IronVise additions.

	// Isolation is how the native Linux tier isolated the command beyond
	// Landlock, seccomp and rlimits: IsolationNamespaces (PID, mount and
	// network namespaces of its own) or IsolationContainer (container
	// mode: the container IronVise runs in provides them). Empty in
	// records written before it existed, which were all namespaces.
	Isolation string `json:"isolation,omitempty"`
	// Namespaces lists the Linux namespaces the command ran in ("pid",
	// "mount", "user").
	Namespaces []string `json:"namespaces,omitempty"`
	// PidMax is the pid_max of the command's PID namespace, when the kernel
	// namespaces it (Linux 6.14+): the process-count backstop that also
	// holds for uid 0.
	PidMax *int `json:"pid_max,omitempty"`
	// Scratch is the native Linux tier's scratch tmpfs: its caps and what
	// became of the host directory it was mounted on.
	Scratch *Scratch `json:"scratch,omitempty"`
	// HiddenPaths counts the protected paths (Options.Hidden) that existed
	// and were masked in the command's mount namespace.
	HiddenPaths *int `json:"hidden_paths,omitempty"`
	// Verified lists what the native Linux tier read back from the kernel
	// after applying the sandbox and before exec ("seccomp",
	// "no_new_privs", "capabilities", "landlock", "network").
	Verified []string `json:"verified,omitempty"`
	// SeatbeltProfileSHA256 is the hash of the macOS Seatbelt profile.
	SeatbeltProfileSHA256 string `json:"seatbelt_profile_sha256,omitempty"`
	// JobObject lists the Windows Job Object limits in force.
	JobObject []string `json:"job_object,omitempty"`
	// Container is what a container ran with (container tier).
	Container *ContainerConfig `json:"container,omitempty"`
	// VM is the microVM's machine configuration (microVM tier).
	VM *VMMachine `json:"vm,omitempty"`
	// Workspace is "overlay" when the command saw the workspace writable
	// through an overlay (Request.Overlay,
	// docs/reference/sandboxing.md#overlay-workspaces); empty when it was
	// read-only.
	Workspace string `json:"workspace,omitempty"`
	// Overlay is the workspace's overlay mount in overlay mode.
	Overlay *OverlayMount `json:"overlay,omitempty"`
}

// OverlayMount describes the overlay a command saw as its workspace.
type OverlayMount struct {
	// Options are the overlayfs mount options besides the directories
	// (for example "redirect_dir=nofollow,metacopy=off,index=off,xino=off",
	// plus "userxattr" when the mount was made in a user namespace and
	// the layers' whiteouts are user.overlay.* attributes).
	Options string `json:"options"`
	// Layers counts the earlier layers between the command's layer and
	// the real workspace.
	Layers int `json:"layers"`
}

// Scratch describes a command's scratch space (IronVise addition to
// docs/design/sandbox.md#sandbox-result).
type Scratch struct {
	// MiB and Inodes are the tmpfs's size and inode caps.
	MiB    int `json:"mib"`
	Inodes int `json:"inodes"`
	// Cleanup is "removed" when nothing of the scratch space is left on
	// the host, otherwise what was left and why it could not be removed.
	Cleanup string `json:"cleanup"`
}

// The values of Enforced.Isolation.
const (
	IsolationNamespaces = "namespaces"
	IsolationContainer  = "container"
)

// ScratchRemoved is Scratch.Cleanup when nothing was left behind.
const ScratchRemoved = "removed"

// ContainerConfig records the limits and site flags a container ran with
// (IronVise addition to docs/design/sandbox.md#sandbox-result).
type ContainerConfig struct {
	// MemoryBytes is the memory limit, swap included (--memory and
	// --memory-swap).
	MemoryBytes int64 `json:"memory_bytes"`
	// CPUs is the CPU quota (--cpus), e.g. "1".
	CPUs string `json:"cpus"`
	// PidsLimit is the process-count limit (--pids-limit).
	PidsLimit int `json:"pids_limit"`
	// CPUSecs and NoFile are the per-process rlimits (--ulimit cpu, nofile).
	CPUSecs int `json:"ulimit_cpu_secs"`
	NoFile  int `json:"ulimit_nofile"`
	// TmpfsMiB is the size of the writable /tmp.
	TmpfsMiB int `json:"tmpfs_mib"`
	// ExtraArgs are the site flags of ECTO_DOCKER_EXTRA_ARGS.
	ExtraArgs []string `json:"extra_args,omitempty"`
}

// VMMachine is a microVM's machine configuration (IronVise addition to
// docs/design/sandbox.md#sandbox-result).
type VMMachine struct {
	VCPUs  int `json:"vcpus"`
	MemMiB int `json:"mem_mib"`
}

// RLimits are the resource limits in force
// (docs/design/sandbox.md#sandbox-result).
type RLimits struct {
	CPUSecs  int `json:"cpu_secs"`
	ASMiB    int `json:"as_mib"`
	NoFile   int `json:"nofile"`
	NProc    int `json:"nproc"`
	FSizeMiB int `json:"fsize_mib"`
}

// resultJSON is the wire shape of Result: every absent value is null.
type resultJSON struct {
	Tier            TierName  `json:"tier"`
	Status          Status    `json:"status"`
	Reason          *string   `json:"reason"`
	ExitCode        *int      `json:"exit_code"`
	Signal          *string   `json:"signal"`
	DurationMS      int64     `json:"duration_ms"`
	Stdout          string    `json:"stdout"`
	Stderr          string    `json:"stderr"`
	StdoutTruncated bool      `json:"stdout_truncated"`
	StderrTruncated bool      `json:"stderr_truncated"`
	Enforced        *Enforced `json:"enforced"`
	// ExecMode is omitted when empty: results recorded before it existed
	// keep their encoding.
	ExecMode string `json:"exec_mode,omitempty"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON implements json.Marshaler with the field names of
// docs/design/sandbox.md#sandbox-result.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{
		Tier: r.Tier, Status: r.Status, Reason: nullable(r.Reason), ExitCode: r.ExitCode,
		Signal: nullable(r.Signal), DurationMS: r.Duration.Milliseconds(),
		Stdout: r.Stdout, Stderr: r.Stderr,
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		Enforced: r.Enforced, ExecMode: r.ExecMode,
	})
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *Result) UnmarshalJSON(b []byte) error {
	var w resultJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("sandbox: decode sandbox_result: %w", err)
	}
	*r = Result{Tier: w.Tier, Status: w.Status, ExitCode: w.ExitCode,
		Duration: time.Duration(w.DurationMS) * time.Millisecond,
		Stdout:   w.Stdout, Stderr: w.Stderr,
		StdoutTruncated: w.StdoutTruncated, StderrTruncated: w.StderrTruncated,
		Enforced: w.Enforced, ExecMode: w.ExecMode}
	if w.Reason != nil {
		r.Reason = *w.Reason
	}
	if w.Signal != nil {
		r.Signal = *w.Signal
	}
	return nil
}

// Attempt is one Run call of a tier: when it began, so that every result
// carries its duration, and how it fails closed.
type Attempt struct {
	tier  TierName
	start time.Time
}

// Begin starts the clock of tier's run of req and checks the request
// (ValidateRequest); the caller aborts with a refusal.
func Begin(tier TierName, req Request) (Attempt, error) {
	return Attempt{tier: tier, start: time.Now()}, ValidateRequest(req)
}

// Abort is the Result of a run whose command never ran or whose outcome
// cannot be trusted, for the reason format and args give.
func (a Attempt) Abort(format string, args ...any) Result {
	return Aborted(a.tier, fmt.Sprintf(format, args...), a.Elapsed())
}

// Restart is a with its clock started now: a prepared command's duration
// runs from its start, not from its preparation.
func Restart(a Attempt) Attempt {
	a.start = time.Now()
	return a
}

// Elapsed is the time since the attempt began.
func (a Attempt) Elapsed() time.Duration { return time.Since(a.start) }

// Ran returns the Result of a command that tier ran for dur, with the
// output it captured, started by /bin/sh -c unless the caller says
// otherwise; the caller adds the outcome.
func Ran(tier TierName, dur time.Duration, stdout, stderr *Collector) Result {
	r := Result{Tier: tier, Status: StatusOK, Duration: dur, ExecMode: ExecShell}
	r.Stdout, r.StdoutTruncated = stdout.Capped()
	r.Stderr, r.StderrTruncated = stderr.Capped()
	return r
}

// TimedOut marks r as a command that the wall-clock timeout cut off after
// dur; killed says what the tier killed.
func (r *Result) TimedOut(timeout, dur time.Duration, killed string) {
	r.Status, r.ExitCode, r.Signal = StatusTimeout, nil, "SIGKILL"
	r.Reason = fmt.Sprintf("wall-clock timeout of %d s exceeded; %s", int(timeout.Seconds()), killed)
	r.Duration, r.Limit = max(dur, timeout), timeout
}

// FirstLine is the first line of s, trimmed and cut to at most max bytes
// (uncut when max is 0): a tool's message quoted in a one-line reason.
func FirstLine(s string, max int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return cutBytes(strings.TrimSpace(s), max)
}

// LastLine is the last non-empty line of s, trimmed and cut to at most max
// bytes (uncut when max is 0).
func LastLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return cutBytes(strings.TrimSpace(s), max)
}

func cutBytes(s string, max int) string {
	if max > 0 && len(s) > max {
		return s[:max]
	}
	return s
}

// Aborted returns the Result of a run that never started because tier could
// not be applied. reason is kept to one line.
func Aborted(tier TierName, reason string, d time.Duration) Result {
	return Result{Tier: tier, Status: StatusAborted, Reason: oneLine(reason), Duration: d}
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(strings.NewReplacer("\r", " ", "\n", " ").Replace(s)), " ")
}

// Exit codes of `ironvise exec` (docs/design/cli.md#exit-codes).
const (
	ExitSandboxAborted = 125
	exitSignalBase     = 128
)

// ProcessExitCode is the exit code `ironvise exec` passes through
// (docs/design/cli.md#exit-codes): the command's own code, 125 when the
// sandbox aborted, 128 + the signal number when a signal killed the command
// (the wall-clock timeout included).
func (r Result) ProcessExitCode() int {
	switch {
	case r.Status == StatusAborted:
		return ExitSandboxAborted
	case r.Signal != "":
		if n, ok := signalNumbers[r.Signal]; ok {
			return exitSignalBase + n
		}
		return exitSignalBase + signalNumbers["SIGKILL"]
	case r.ExitCode != nil:
		return *r.ExitCode
	case r.Status == StatusTimeout:
		return exitSignalBase + signalNumbers["SIGKILL"]
	}
	return ExitSandboxAborted
}

// signalNumbers maps the names Result.Signal uses to the Linux numbers, the
// ones `ironvise exec` reports as 128+N on every platform so that scripts
// see one convention.
var signalNumbers = map[string]int{
	"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6,
	"SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
	"SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGSTKFLT": 16, "SIGCHLD": 17,
	"SIGCONT": 18, "SIGSTOP": 19, "SIGTSTP": 20, "SIGTTIN": 21, "SIGTTOU": 22,
	"SIGURG": 23, "SIGXCPU": 24, "SIGXFSZ": 25, "SIGVTALRM": 26, "SIGPROF": 27,
	"SIGWINCH": 28, "SIGIO": 29, "SIGPWR": 30, "SIGSYS": 31,
}

// SignalName returns the conventional name of Linux signal number n
// ("SIGKILL"), or "SIG<n>" for one without a name.
func SignalName(n int) string {
	for name, v := range signalNumbers {
		if v == n {
			return name
		}
	}
	return fmt.Sprintf("SIG%d", n)
}
