package container

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ironvise/ironvise/internal/sandbox/envallow"
)

// ECTO_DOCKER_EXTRA_ARGS is an allowlist: a flag passes only if it is
// listed below and its value passes its check. A denylist would let the
// next runtime release's flag through; an allowlist fails closed.
//
// The words are read exactly as the runtimes' flag parser (spf13/pflag,
// used by both Docker's and Podman's clients) reads them, so that no
// spelling reaches the runtime unchecked: "--env X", "--env=X", "-e X",
// "-eX" and "-e=X" all give --env the value X, and a value is always the
// next word when it is not attached, even if it starts with "-".

// extraFlag is a flag ECTO_DOCKER_EXTRA_ARGS may carry.
type extraFlag struct {
	long  string // "--env"
	short string // "-e", or ""
	value bool   // takes a value
	// what says what the flag does and why it cannot weaken the sandbox.
	what string
	// check, when set, refuses values that would weaken the sandbox. Its
	// message may quote the value only where the value cannot be secret.
	check func(v string) error
}

// extraFlags are the accepted flags. Each names nothing on the host and
// cannot undo a flag of IronVise's (they all come before the site flags,
// and the runtimes let a later flag win).
var extraFlags = []extraFlag{
	{long: "--runtime", value: true, check: checkRuntime,
		what: "an OCI runtime configured by name in containers.conf or daemon.json (runc, crun, runsc); never a path"},
	{long: "--ulimit", value: true, check: checkUlimit,
		what: "a per-process limit IronVise does not set itself (" + strings.Join(siteUlimits, ", ") + ")"},
	{long: "--label", short: "-l", value: true,
		what: "metadata for the site's own tooling; no runtime changes a container's confinement for a label"},
	{long: "--env", short: "-e", value: true, check: checkEnv,
		what: "NAME=value only, never a bare name or a wildcard (both copy IronVise's own environment), never a secret name, HOME, TMPDIR or LD_*"},
	{long: "--storage-opt", value: true, check: checkStorageOpt,
		what: "size=N only: a quota on the container's (read-only) layer"},
	{long: "--stop-timeout", value: true, check: checkUint,
		what: "seconds; IronVise removes containers with a kill anyway"},
	{long: "--platform", value: true,
		what: "the image variant; IronVise runs the image by its ID and never pulls"},
	{long: "--hostname", value: true,
		what: "the name the container sees; its UTS namespace is its own"},
	{long: "--oom-score-adj", value: true, check: checkOOMScore,
		what: "0 to 1000 only: the container may be killed sooner under host memory pressure, never later"},
	{long: "--memory-reservation", value: true,
		what: "a soft memory limit, below --memory"},
	{long: "--cpu-shares", value: true, check: checkUint,
		what: "a relative CPU weight, within --cpus"},
	{long: "--cpuset-cpus", value: true, check: checkCPUSet,
		what: "which CPUs the container may use"},
	{long: "--cpuset-mems", value: true, check: checkCPUSet,
		what: "which memory nodes the container may use"},
	{long: "--blkio-weight", value: true, check: checkUint,
		what: "a relative block I/O weight"},
	{long: "--init",
		what: "the runtime's own init (catatonit, tini) as PID 1 to reap zombies"},
	{long: "--tmpfs", value: true, check: checkTmpfs,
		what: "another in-memory scratch directory, counted in --memory; never on /, the workspace, /tmp, /dev, /proc or /sys, never exec, suid or dev"},
	{long: "--security-opt", value: true, check: checkSecurityOpt,
		what: "no-new-privileges only (already set): any other value replaces or disables a layer IronVise sets"},
	{long: "--userns", value: true, check: checkUserns,
		what: "auto or auto:size=N only: Podman maps the container's users to unprivileged host ids"},
}

// lazyRegexp compiles a constant pattern on first use rather than when
// the package is initialised: every ironvise process links this package,
// and few ever check a container flag.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// refusedFlags say why a well-known flag is refused, for the error; any
// flag not in extraFlags is refused whether listed here or not.
var refusedFlags = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	// Security: the runtime runs as root (or as IronVise's user) on the
	// host; a path in a flag is read, written or executed there, outside
	// the container.
	for _, f := range []string{"--cidfile", "--conmon-pidfile", "--pidfile", "--env-file", "--label-file",
		"--authfile", "--cert-dir", "--decryption-key", "--secret", "--volume", "-v", "--mount", "--volumes-from",
		"--device", "--device-read-bps", "--device-read-iops", "--device-write-bps", "--device-write-iops",
		"--blkio-weight-device", "--gpus", "--init-path", "--rootfs", "--seccomp-policy", "--sdnotify",
		"--chrootdirs", "--cgroup-conf", "--hooks-dir", "--image-volume", "--conmon-socket"} {
		m[f] = "it names a host path, which the runtime would read, write or run on the host"
	}
	m["--log-opt"] = "it names a host path: path= appends the output to any host file, as root, unbounded, surviving the container"
	m["--log-driver"] = "IronVise sets the log driver itself, so that the runtime stores no output on the host's disk"
	m["--tz"] = "it names a host path: the runtime copies a file of the host's zoneinfo (or /etc/localtime) into the container; pass -e TZ=Area/City instead"
	m["--cgroup-parent"] = "it names a host path: the container goes into a host cgroup of its choosing"
	m["--annotation"] = "runtimes act on annotations (crun's run.oci.keep_original_groups keeps the caller's groups)"
	m["--env-host"] = "it copies IronVise's whole environment, secrets included, into the container"
	m["--env-merge"] = "it expands host variables into the container's environment"
	m["--group-add"] = "it adds a group to the command's identity (65534:65534, no other group)"
	m["--user"] = "IronVise runs every command as 65534:65534"
	m["-u"] = m["--user"]
	m["--shm-size"] = fmt.Sprintf("IronVise caps /dev/shm itself (%d MiB)", ShmMiB)
	m["--"] = "it ends the flags: what follows would be taken for the image and its command"
	return m
})

// lookupExtra returns the accepted flag spelled name ("--env" or "-e").
func lookupExtra(name string) (extraFlag, bool) {
	i := slices.IndexFunc(extraFlags, func(f extraFlag) bool { return f.long == name || f.short != "" && f.short == name })
	if i < 0 {
		return extraFlag{}, false
	}
	return extraFlags[i], true
}

// AllowedExtraFlags lists the flags ECTO_DOCKER_EXTRA_ARGS accepts, with
// their short forms: runtime selection, limits within IronVise's, labels,
// literal environment variables — nothing that names a host path, adds
// privileges, devices, mounts, namespaces or network, changes the user,
// the log or the seccomp profile, or replaces the command.
func AllowedExtraFlags() []string {
	var names []string
	for _, f := range extraFlags {
		names = append(names, f.long)
		if f.short != "" {
			names = append(names, f.short)
		}
	}
	slices.Sort(names)
	return names
}

// ExtraFlagHelp returns, for each accepted flag, what it does and why it
// cannot weaken the sandbox (the table of docs/reference/sandboxing.md).
func ExtraFlagHelp() [][2]string {
	var out [][2]string
	for _, f := range extraFlags {
		name := f.long
		if f.short != "" {
			name += ", " + f.short
		}
		out = append(out, [2]string{name, f.what})
	}
	return out
}

// checkExtraArgs accepts ECTO_DOCKER_EXTRA_ARGS only if every word is an
// accepted flag, in any of the spellings the runtimes' parser takes, with
// an acceptable value. Errors never quote an environment value.
func checkExtraArgs(args []string) error {
	refuse := func(shown, why string) error {
		return fmt.Errorf("%w: %s: %s; fix: remove it (accepted: %s)", ErrExtraArgs, shown, why, strings.Join(AllowedExtraFlags(), ", "))
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		var (
			name     string // the flag as the tables spell it
			value    string
			hasValue bool
		)
		switch {
		case arg == "--":
			return refuse(`"--"`, refusedFlags()["--"])
		case strings.HasPrefix(arg, "--"):
			name, value, hasValue = strings.Cut(arg, "=")
		case strings.HasPrefix(arg, "-") && len(arg) > 1:
			// A shorthand is one letter; the rest of the word, if any, is
			// its value ("-eX", or "-e=X"). pflag would read the rest of a
			// boolean shorthand as more shorthands, but no accepted
			// shorthand is boolean.
			name = arg[:2]
			if rest := arg[2:]; rest != "" {
				value, hasValue = strings.TrimPrefix(rest, "="), true
			}
		default:
			shown := fmt.Sprintf("argument %d", i+1)
			if !strings.Contains(arg, "=") && len(arg) <= 64 {
				shown = strconv.Quote(arg)
			}
			return refuse(shown, "not a flag (site flags only; the image and the command are IronVise's)")
		}
		f, ok := lookupExtra(name)
		if !ok {
			why, known := refusedFlags()[name]
			if !known {
				why = "not an accepted flag: only flags that cannot weaken the sandbox are"
			}
			return refuse(strconv.Quote(name), why)
		}
		switch {
		case !f.value && hasValue:
			// pflag takes --init=true and --init=false.
			if value != "true" && value != "false" {
				return refuse(strconv.Quote(name), "takes no value")
			}
			continue
		case !f.value:
			continue
		case !hasValue:
			if i+1 >= len(args) {
				return refuse(strconv.Quote(name), "needs a value")
			}
			i++
			value = args[i]
		}
		if f.check != nil {
			if err := f.check(value); err != nil {
				return refuse(f.long, err.Error())
			}
		}
	}
	return nil
}

// envName is a portable environment variable name.
var envName = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkEnv accepts NAME=value with a name that is neither secret nor one
// the tier sets. It never quotes the value.
func checkEnv(v string) error {
	name, value, ok := strings.Cut(v, "=")
	switch {
	// Security: the runtimes copy a host variable for a bare name and
	// every host variable with the prefix for NAME* — IronVise's own
	// environment, with its key passphrase, DATABASE_URL and API keys.
	case !ok && strings.HasSuffix(name, "*"):
		return fmt.Errorf("%q is a wildcard, which copies every variable of IronVise's own environment with that prefix; give NAME=value", name)
	case !ok:
		return fmt.Errorf("the bare name %q copies the variable from IronVise's own environment; give NAME=value", clip(name))
	case !envName().MatchString(name):
		return fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", clip(name))
	// Security: a secret never goes to a command, whoever set it.
	case envallow.Secret(name):
		return fmt.Errorf("%s is a name IronVise treats as secret (keys, tokens, passwords, credentials, DATABASE_URL, its own settings); secrets never reach a command", name)
	case name == "HOME" || name == "TMPDIR":
		return fmt.Errorf("IronVise sets %s itself (/tmp)", name)
	// Security: the dynamic loader's variables change what every program
	// in the container loads and runs (LD_PRELOAD, LD_LIBRARY_PATH).
	case strings.HasPrefix(strings.ToUpper(name), "LD_"):
		return fmt.Errorf("%s is a dynamic-loader variable, which changes what every program in the container runs", name)
	case urlWithPassword(value):
		return fmt.Errorf("the value of %s is a URL with a password; secrets never reach a command", name)
	}
	return nil
}

// urlWithPassword reports whether v is, or contains, a URL carrying a
// password (scheme://user:password@host).
func urlWithPassword(v string) bool {
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == ';' }) {
		if u, err := url.Parse(f); err == nil && u.User != nil {
			if _, set := u.User.Password(); set {
				return true
			}
		}
	}
	return false
}

// runtimeName is a runtime configured by name.
var runtimeName = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// checkRuntime refuses a path: the runtime client would run that host
// program, as root, as the container's OCI runtime.
func checkRuntime(v string) error {
	if !runtimeName().MatchString(v) {
		return fmt.Errorf("%q is not a runtime name: a path would make the runtime run that host program as root; configure the runtime by name in containers.conf or daemon.json", clip(v))
	}
	return nil
}

// siteUlimits are the limits a site may set; IronVise sets cpu, nofile,
// nproc, core and msgqueue itself, and a later --ulimit of the same name
// would replace its value. The scheduling limits (nice, rtprio, rttime) are out:
// they let a command claim more CPU than its share.
var siteUlimits = []string{"as", "data", "fsize", "locks", "memlock", "rss", "sigpending", "stack"}

func checkUlimit(v string) error {
	name, _, _ := strings.Cut(v, "=")
	if !slices.Contains(siteUlimits, name) {
		return fmt.Errorf("%q: IronVise sets cpu, nofile, nproc, core and msgqueue itself (ECTO_SANDBOX_CPU_SECS, ECTO_SANDBOX_NOFILE) and scheduling limits are not the site's; accepted: %s", clip(name), strings.Join(siteUlimits, ", "))
	}
	return nil
}

var storageSize = lazyRegexp(`^size=[0-9]+[bkmgBKMG]?$`)

func checkStorageOpt(v string) error {
	if !storageSize().MatchString(v) {
		return fmt.Errorf("%q: only size=N is accepted", clip(v))
	}
	return nil
}

func checkUint(v string) error {
	if _, err := strconv.ParseUint(v, 10, 32); err != nil {
		return fmt.Errorf("%q is not a non-negative integer", clip(v))
	}
	return nil
}

func checkOOMScore(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1000 {
		return fmt.Errorf("%q: only 0 to 1000 (a negative score shields the container from the OOM killer at the host's expense)", clip(v))
	}
	return nil
}

var cpuSet = lazyRegexp(`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`)

func checkCPUSet(v string) error {
	if !cpuSet().MatchString(v) {
		return fmt.Errorf("%q is not a list of numbers and ranges", clip(v))
	}
	return nil
}

// tmpfsForbidden are the targets a site tmpfs may not cover or lie under:
// IronVise's own /tmp, and the kernel and device views a tmpfs would
// replace.
var tmpfsForbidden = []string{"/tmp", "/dev", "/proc", "/sys"}

// checkTmpfs refuses a tmpfs over the workspace, the root or IronVise's
// own mounts, and one mounted exec, suid or dev.
func checkTmpfs(v string) error {
	target, opts, _ := strings.Cut(v, ":")
	// The runtimes clean the target themselves: "//tmp" or "/var/../tmp"
	// must not slip past the comparisons below.
	if !strings.HasPrefix(target, "/") || path.Clean(target) != target {
		return fmt.Errorf("%q is not a clean absolute path", clip(target))
	}
	clean := strings.TrimRight(target, "/")
	switch {
	case clean == "" || within(workspaceTarget, clean) || within(clean, workspaceTarget):
		return fmt.Errorf("a tmpfs on %q would replace the read-only workspace or root", clip(v))
	}
	for _, f := range tmpfsForbidden {
		if within(clean, f) {
			return fmt.Errorf("a tmpfs on %q would replace IronVise's %s", clip(target), f)
		}
	}
	for _, o := range strings.Split(opts, ",") {
		// Security: Podman mounts a site tmpfs noexec, nosuid and nodev
		// unless told otherwise; exec would let a command run what it
		// wrote, like an executable /tmp.
		switch o {
		case "exec", "suid", "dev":
			return fmt.Errorf("option %s would undo no%s on a writable directory", o, o)
		}
	}
	return nil
}

// checkSecurityOpt accepts no-new-privileges, which IronVise sets anyway,
// and nothing else: seccomp= would replace IronVise's profile, label= and
// apparmor= change or disable the LSM confinement (label=type:spc_t is
// unconfined), systempaths= and unmask= expose /proc and /sys paths the
// runtime masks.
func checkSecurityOpt(v string) error {
	switch v {
	case "no-new-privileges", "no-new-privileges=true", "no-new-privileges:true":
		return nil
	}
	k, _, _ := strings.Cut(v, "=")
	if k == v {
		k, _, _ = strings.Cut(v, ":") // Docker's older key:value form
	}
	switch k {
	case "seccomp":
		return fmt.Errorf("IronVise applies its own seccomp profile (the native tier's allowlist); another would replace it")
	case "label", "apparmor":
		return fmt.Errorf("%s= changes or disables the container's LSM confinement", k)
	case "systempaths", "unmask":
		return fmt.Errorf("%s= exposes the /proc and /sys paths the runtime masks", k)
	}
	return fmt.Errorf("%q is not accepted: only no-new-privileges", clip(v))
}

var usernsAuto = lazyRegexp(`^auto(:size=[0-9]+)?$`)

// checkUserns accepts Podman's automatic mapping to unprivileged host ids,
// with at most a size: host shares the host's user namespace, ns: and
// container: join another, keep-id maps the caller, and auto's
// uidmapping= could map the command's uid to host root.
func checkUserns(v string) error {
	if !usernsAuto().MatchString(v) {
		return fmt.Errorf("%q: only auto or auto:size=N (host, ns:, container:, keep-id and explicit mappings can give the command a host identity)", clip(v))
	}
	return nil
}

// clip shortens a value for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
