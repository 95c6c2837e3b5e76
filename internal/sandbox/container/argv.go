package container

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// runSpec is everything one `run` needs.
type runSpec struct {
	runtime   string // "docker" or "podman"
	name      string // unique container name
	image     string // what to start (the preflight's image ID)
	workspace string // absolute host path, mounted read-only
	command   string
	env       []string // KEY=VALUE for the command
	memory    string   // --memory / --memory-swap value
	cpus      string
	pids      int
	cpuSecs   int
	noFile    int
	extra     []string
	masks     []mask // protected paths inside the workspace, covered read-only
}

// workspaceTarget is where the workspace appears in the container.
const workspaceTarget = "/workspace"

// argv is the runtime client's arguments for s. Every line carries the
// attack it stops; the first group is the seed's floor (sandbox.md §6).
func (s runSpec) argv() []string {
	a := []string{"run",
		// No container outlives its command.
		"--rm",
		// No network at all, loopback aside: nothing to exfiltrate to,
		// no host or cloud metadata service to reach.
		"--network=none",
		// The image's root cannot be altered (no planted binaries for the
		// next step; each run is fresh anyway).
		"--read-only",
		// setuid binaries and file capabilities in the image grant nothing.
		"--security-opt", "no-new-privileges",
		// Never root in the container, so the root-only kernel surface and
		// root-owned files are out of reach.
		"--user", "nobody",
		// An aggregate memory limit; swap is no way around it.
		"--memory", s.memory, "--memory-swap", s.memory,
		"--cpus", s.cpus,

		// IronVise's hardening.
		// No capabilities even if the user switch were undone.
		"--cap-drop", "ALL",
		// Fork bombs stop at the container's own limit.
		"--pids-limit", strconv.Itoa(s.pids),
		// The only writable place: small, and no execution of what was
		// written there.
		"--tmpfs", fmt.Sprintf("/tmp:rw,nosuid,nodev,noexec,size=%dm,mode=1777", TmpfsMiB),
		// What runs is what the operator put on the host, never what a
		// registry serves at run time.
		"--pull=never",
		// A name IronVise knows, so a timeout can remove the container
		// itself (killing the client alone leaves it running).
		"--name", s.name,
		// The image's ENTRYPOINT does not run: otherwise an image could
		// receive "sh -c <command>" as arguments to anything.
		"--entrypoint=",
		// The workspace, read-only.
		"--mount", "type=bind,source=" + s.workspace + ",target=" + workspaceTarget + ",readonly",
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
	)
	if s.runtime == "podman" {
		// Podman otherwise mounts writable tmpfs on /run, /var/tmp and
		// /dev/shm of a --read-only container; /tmp is the only one needed.
		a = append(a, "--read-only-tmpfs=false")
	}
	for _, kv := range s.env {
		a = append(a, "--env", kv)
	}
	a = append(a, s.extra...)
	// The command is one argument of sh inside the container: no host
	// shell ever parses it.
	return append(a, s.image, "sh", "-c", s.command)
}

// SeedFlags are the flags the seed requires on every container (sandbox.md
// §6), as they appear in the argv, in order.
var SeedFlags = []string{"--rm", "--network=none", "--read-only", "--security-opt", "no-new-privileges", "--user", "nobody", "--memory", "--cpus"}

// extraFlag describes a flag ECTO_DOCKER_EXTRA_ARGS may carry.
type extraFlag struct {
	value bool // takes a value
	// check, when set, rejects values that would weaken the sandbox.
	check func(v string) error
}

// AllowedExtraFlags lists the flags ECTO_DOCKER_EXTRA_ARGS accepts: runtime
// selection, limits, labels and logging — nothing that can add privileges,
// devices, mounts, namespaces or network, or replace the command.
func AllowedExtraFlags() []string {
	var names []string
	for n := range extraFlags {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

var extraFlags = map[string]extraFlag{
	"--runtime":            {value: true},
	"--ulimit":             {value: true},
	"--label":              {value: true},
	"-l":                   {value: true},
	"--annotation":         {value: true},
	"--log-driver":         {value: true},
	"--log-opt":            {value: true},
	"--env":                {value: true},
	"-e":                   {value: true},
	"--cgroup-parent":      {value: true},
	"--storage-opt":        {value: true},
	"--shm-size":           {value: true},
	"--stop-timeout":       {value: true},
	"--platform":           {value: true},
	"--hostname":           {value: true},
	"--oom-score-adj":      {value: true},
	"--memory-reservation": {value: true},
	"--cpu-shares":         {value: true},
	"--cpuset-cpus":        {value: true},
	"--cpuset-mems":        {value: true},
	"--blkio-weight":       {value: true},
	"--tz":                 {value: true},
	"--init":               {},
	"--tmpfs":              {value: true, check: checkTmpfs},
	"--security-opt":       {value: true, check: checkSecurityOpt},
	"--userns":             {value: true, check: checkUserns},
}

// checkExtraArgs accepts ECTO_DOCKER_EXTRA_ARGS only if every flag is on the
// allowlist with an acceptable value. A denylist would let the next runtime
// release's flag through; an allowlist fails closed.
func checkExtraArgs(args []string) error {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, value, hasValue := strings.Cut(arg, "=")
		f, ok := extraFlags[name]
		if !ok || !strings.HasPrefix(arg, "-") {
			return fmt.Errorf("%w: %q is not an accepted flag: only flags that cannot weaken the sandbox are (%s)",
				ErrExtraArgs, arg, strings.Join(AllowedExtraFlags(), ", "))
		}
		switch {
		case !f.value && hasValue:
			return fmt.Errorf("%w: %s takes no value", ErrExtraArgs, name)
		case f.value && !hasValue:
			if i+1 >= len(args) {
				return fmt.Errorf("%w: %s needs a value", ErrExtraArgs, name)
			}
			i++
			value = args[i]
		}
		if f.check != nil {
			if err := f.check(value); err != nil {
				return fmt.Errorf("%w: %s %s: %w", ErrExtraArgs, name, value, err)
			}
		}
	}
	return nil
}

// checkTmpfs refuses a tmpfs over the workspace or the root.
func checkTmpfs(v string) error {
	target, _, _ := strings.Cut(v, ":")
	target = strings.TrimRight(target, "/")
	if target == "" || target == workspaceTarget || strings.HasPrefix(workspaceTarget, target+"/") {
		return fmt.Errorf("a tmpfs on %q would replace the read-only workspace or root", v)
	}
	return nil
}

// checkSecurityOpt accepts SELinux types and levels and named seccomp or
// AppArmor profiles; it refuses anything that disables a layer.
func checkSecurityOpt(v string) error {
	k, val, _ := strings.Cut(v, "=")
	if k == v {
		k, val, _ = strings.Cut(v, ":") // Docker's older key:value form
	}
	switch k {
	case "label":
		if strings.HasPrefix(val, "type:") || strings.HasPrefix(val, "level:") || strings.HasPrefix(val, "user:") || strings.HasPrefix(val, "role:") {
			return nil
		}
		return fmt.Errorf("only label=type:…, level:…, user:… or role:… are accepted (label=disable turns SELinux off)")
	case "seccomp", "apparmor":
		if val == "" || val == "unconfined" {
			return fmt.Errorf("%s=unconfined would drop a layer", k)
		}
		return nil
	case "no-new-privileges":
		if val == "" || val == "true" {
			return nil
		}
	}
	return fmt.Errorf("not an accepted security option (accepted: label=type:…, seccomp=PROFILE, apparmor=PROFILE)")
}

// checkUserns refuses the host user namespace, which would undo a
// remapping daemon's isolation.
func checkUserns(v string) error {
	if v == "" || v == "host" {
		return fmt.Errorf("--userns=host would share the host's user namespace")
	}
	return nil
}

// mountSafe reports whether path can be put in a --mount value: the
// runtimes parse it as CSV, so a comma or a quote would change its meaning.
func mountSafe(path string) bool {
	return !strings.ContainsAny(path, ",\"\n\r")
}
