package container

import (
	"fmt"
	"strconv"
	"strings"
)

// runSpec is everything one `run` needs.
type runSpec struct {
	runtime   string // "docker" or "podman"
	name      string // unique container name
	image     string // what to start (the preflight's image ID)
	workspace string // absolute host path, mounted read-only
	// writable mounts workspace read-write: overlay mode, where it is
	// the merged view IronVise mounted (overlay.go), never the real
	// directory.
	writable  bool
	command   string
	env       []string // KEY=VALUE for the command
	memory    string   // --memory / --memory-swap value
	cpus      string
	pids      int
	cpuSecs   int
	noFile    int
	extra     []string
	masks     []mask // protected paths inside the workspace, covered read-only
	seccomp   string // the file holding IronVise's seccomp profile
	logDriver string // logDriverNone or logDriverPassthrough
	// netns is the network namespace of a proxy-mode run (see
	// egress.go); "" is mode none.
	netns string
}

// workspaceTarget is where the workspace appears in the container.
const workspaceTarget = "/workspace"

// The command's identity in the container: numeric, so that nothing in the
// image is consulted (see argv).
const (
	commandUID = 65534
	commandGID = 65534
)

// Log drivers (see argv).
const (
	logDriverNone        = "none"
	logDriverPassthrough = "passthrough"
)

// argv is the runtime client's arguments for s. Every line carries the
// attack it stops; the first group is the floor docs/sandboxing.md promises
// (docs/design/sandbox.md#container-tier).
func (s runSpec) argv() []string {
	a := []string{"run",
		// No container outlives its command.
		"--rm",
		// No network at all, loopback aside: nothing to exfiltrate to,
		// no host or cloud metadata service to reach. In proxy mode the
		// namespace IronVise made, which has loopback only too, with the
		// egress proxy on it.
		s.network(),
		// The image's root cannot be altered (no planted binaries for the
		// next step; each run is fresh anyway).
		"--read-only",
		// setuid binaries and file capabilities in the image grant nothing.
		"--security-opt", "no-new-privileges",
		// Security: never root in the container, and never an identity
		// the image chooses. A name ("nobody") is resolved in the image's
		// /etc/passwd, which may map it to uid 0; a uid without a group
		// takes the primary group the image gives it (0 again), and a
		// user found by name gets every group /etc/group lists it in.
		// uid:gid, both numeric, consults nothing in the image and adds
		// no supplementary group. The preamble (confinementCheck) reads
		// the identity back before the command runs.
		"--user", strconv.Itoa(commandUID) + ":" + strconv.Itoa(commandGID),
		// An aggregate memory limit; swap is no way around it.
		"--memory", s.memory, "--memory-swap", s.memory,
		"--cpus", s.cpus,

		// IronVise's hardening.
		// No capabilities even if the user switch were undone.
		"--cap-drop", "ALL",
		// Security: IronVise's own system-call allowlist, the native
		// tier's (package seccomp, OCIProfile), instead of the runtime's
		// default, which lets a command create user namespaces
		// (`unshare -r` gives it every capability in one: mount, network
		// configuration — the usual first step of a kernel exploit) and
		// reach io_uring, keyctl and sockets.
		"--security-opt", "seccomp=" + s.seccomp,
		// Fork bombs stop at the container's own limit.
		"--pids-limit", strconv.Itoa(s.pids),
		// The only writable places: small, and no execution of what was
		// written there. /dev/shm is the second one (POSIX shared memory
		// and semaphores need it); its size is capped too.
		"--tmpfs", fmt.Sprintf("/tmp:rw,nosuid,nodev,noexec,size=%dm,mode=1777", TmpfsMiB),
		"--shm-size", fmt.Sprintf("%dm", ShmMiB),
		// Security: the runtime stores none of the output. Its default
		// log (Podman's k8s-file, or journald) copies every byte the
		// command writes to the host's disk outside every container
		// limit — gigabytes in seconds — before IronVise keeps 64 KiB of
		// it. passthrough hands the command IronVise's own pipes, none
		// keeps no log and streams through the attached client; either
		// way the output reaches only IronVise's capped collector.
		"--log-driver", s.logDriver,
		// What runs is what the operator put on the host, never what a
		// registry serves at run time.
		"--pull=never",
		// A name IronVise knows, so a timeout can remove the container
		// itself (killing the client alone leaves it running).
		"--name", s.name,
		// The image's ENTRYPOINT does not run: otherwise an image could
		// receive "sh -c <command>" as arguments to anything.
		"--entrypoint=",
		// The workspace, read-only (overlay mode: the merged view,
		// writable; see workspaceMount).
		"--mount", s.workspaceMount(),
	}
	// Each protected path inside the workspace (~/.ssh of a home
	// workspace, the data directory) is covered by an empty read-only
	// directory or file, so the command cannot read it whatever path it
	// computes; the runtimes mount parents before children.
	for _, m := range s.masks {
		a = append(a, "--mount", "type=bind,source="+m.source+",target="+m.target+",readonly")
	}
	a = append(a,
		"--workdir", workspaceTarget,
		// Per-process backstops, set explicitly (see nprocUlimit).
		"--ulimit", fmt.Sprintf("cpu=%d:%d", s.cpuSecs, s.cpuSecs),
		"--ulimit", fmt.Sprintf("nofile=%d:%d", s.noFile, s.noFile),
		"--ulimit", fmt.Sprintf("nproc=%d:%d", nprocUlimit, nprocUlimit),
		"--ulimit", "core=0:0",
		// Security: no POSIX message queue can be created (each needs a
		// share of RLIMIT_MSGQUEUE), so /dev/mqueue, writable by
		// everyone, stores nothing: /tmp and /dev/shm stay the only
		// writable places. The limit is per uid on the host, so a queue
		// could also exhaust the budget of every container's uid 65534.
		"--ulimit", "msgqueue=0:0",
	)
	if s.runtime == "podman" {
		// Podman otherwise mounts writable tmpfs on /run, /var/tmp and
		// /dev/shm of a --read-only container; /tmp is the only one needed.
		a = append(a, "--read-only-tmpfs=false",
			// Security: Podman otherwise copies IronVise's own
			// HTTP_PROXY, HTTPS_PROXY, FTP_PROXY and NO_PROXY (any
			// case) into the container, past the environment allowlist:
			// a proxy URL often carries credentials. In proxy mode
			// ProxyEnv's values are the only ones.
			"--http-proxy=false")
	}
	if s.netns != "" {
		// No resolv.conf: Podman copies the host's into a joined
		// namespace. There is no resolver to reach; the proxy resolves
		// names.
		a = append(a, "--dns=none")
	}
	for _, kv := range s.env {
		a = append(a, "--env", kv)
	}
	// Site flags come last before the image, after every flag of
	// IronVise's: checkExtraArgs admits none that could override one.
	a = append(a, s.extra...)
	// The command is one argument of sh inside the container: no host
	// shell ever parses it. The outer sh runs the preamble, which checks
	// the confinement, then replaces itself with `sh -c <command>`.
	return append(a, s.image, "sh", "-c", confinementCheck, "sh", s.command)
}

// workspaceMount is the --mount value of the workspace: the real
// directory read-only, or in overlay mode the overlay's merged view
// read-write (changes land in the upper layer only).
func (s runSpec) workspaceMount() string {
	m := "type=bind,source=" + s.workspace + ",target=" + workspaceTarget
	if s.writable {
		return m
	}
	return m + ",readonly"
}

// network is the --network flag: none, or the proxy-mode namespace.
func (s runSpec) network() string {
	if s.netns == "" {
		return "--network=none"
	}
	return "--network=ns:" + s.netns
}

// SeedFlags are the flags docs/sandboxing.md promises on every container
// (docs/design/sandbox.md#container-tier), as they appear in the argv, in
// order.
var SeedFlags = []string{"--rm", "--network=none", "--read-only", "--security-opt", "no-new-privileges", "--user", "65534:65534", "--memory", "--cpus"}

// checkFailedPrefix starts the line the preamble writes to stderr when the
// container does not run confined.
const checkFailedPrefix = "ironvise: the container is not confined as required:"

// confinementCheck is the preamble of every container's shell. It reads
// the shell's own /proc/self/status — what the kernel enforces on the
// process that is about to become the command, whatever the runtime,
// its configuration or the image did — and exits 125 (the runtime's own
// failure code: the action aborts, see runtimeFailure) unless the command
// runs as uid and gid 65534 with no other group, no capability in any set,
// no_new_privs and a seccomp filter. A command can forge the failure line
// only to have its own run aborted. It needs nothing but a POSIX shell:
// the redirection makes /proc/self the shell itself.
var confinementCheck = strings.Join([]string{
	`ok=0 seen=`,
	`while IFS= read -r l; do`,
	`  case $l in`,
	`  Uid:*|Gid:*|Groups:*|NoNewPrivs:*|Seccomp:*|Cap*:*) seen="$seen $l;";;`,
	`  *) continue;;`,
	`  esac`,
	`  case $l in`,
	"  'Uid:\t65534\t65534\t65534\t65534'|'Gid:\t65534\t65534\t65534\t65534'|'Groups:\t65534 '|'Groups:\t'|'NoNewPrivs:\t1'|'Seccomp:\t2') ok=$((ok+1));;",
	"  'CapEff:\t0000000000000000'|'CapPrm:\t0000000000000000'|'CapBnd:\t0000000000000000'|'CapAmb:\t0000000000000000') ok=$((ok+1));;",
	`  esac`,
	`done </proc/self/status`,
	`if [ "$ok" != 9 ]; then`,
	`  echo "` + checkFailedPrefix + ` uid, gid and groups 65534, no capabilities, no_new_privs and seccomp required; found:$seen" >&2`,
	`  exit 125`,
	`fi`,
	`exec sh -c "$1"`,
}, "\n")

// mountSafe reports whether path can be put in a --mount value: the
// runtimes parse it as CSV, so a comma or a quote would change its meaning.
func mountSafe(path string) bool {
	return !strings.ContainsAny(path, ",\"\n\r")
}
