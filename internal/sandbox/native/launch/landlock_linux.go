//go:build linux

package launch

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
)

// Landlock access rights used by the tier's rules.
const (
	rightsExec    = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	rightsRead    = ll.AccessFSReadFile | ll.AccessFSReadDir
	rightsDevNull = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
	// rightsScratch is read-write without execute: a command cannot drop
	// a binary of its own into the scratch directory and run it.
	rightsScratch = ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSWriteFile | ll.AccessFSTruncate |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir | ll.AccessFSMakeReg |
		ll.AccessFSMakeSym | ll.AccessFSMakeFifo | ll.AccessFSRefer
	// rightsOverlay is the workspace in overlay mode: read, write,
	// truncate, create files, directories and symlinks, remove, rename
	// and link (refer). Never execute, and no device, fifo or socket
	// nodes: a 0/0 character device is how overlayfs marks a deletion,
	// and one the command made would read as a whiteout in its layer.
	rightsOverlay = rightsRead | ll.AccessFSWriteFile | ll.AccessFSTruncate |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir | ll.AccessFSMakeReg |
		ll.AccessFSMakeSym | ll.AccessFSRefer
)

// systemExecDirs hold the programs and libraries commands need (read +
// execute).
var systemExecDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64"}

// SystemReadRoots are the roots outside the workspace that a command can
// read: the execute roots, /etc and /proc. A protected path anywhere else
// is out of reach already, so the tier masks only those under these roots
// or the workspace.
func SystemReadRoots() []string {
	return append(slices.Clone(systemExecDirs), "/etc", "/proc")
}

// LandlockConfig returns go-landlock's preset for abi (1 or more): it
// restricts everything that ABI can restrict. An ABI newer than go-landlock
// knows gets its newest preset.
func LandlockConfig(abi int) landlock.Config {
	configs := [...]landlock.Config{
		landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
		landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
	}
	return configs[min(max(abi, 1), len(configs))-1]
}

// LandlockABI returns the usable ABI of the running kernel, downgraded the
// way go-landlock downgrades it when the signal-scoping erratum is not
// fixed, so that the recorded ABI is the one enforced.
func LandlockABI() (int, error) {
	v, err := kernel.LandlockABI()
	if err != nil {
		return 0, err
	}
	if v >= 6 {
		if errata, err := kernel.LandlockErrata(); err != nil || errata&0x2 == 0 {
			v = 5
		}
	}
	return v, nil
}

// applyLandlock restricts the launch thread, the one that becomes the
// command, and returns the ABI in force. Every feature of the kernel's ABI
// is used; an ABI of 0 (no Landlock) is a failure, never a downgrade to
// nothing.
func (l *launcher) applyLandlock() (int, error) {
	var abi int
	query := func() error {
		var err error
		abi, err = LandlockABI()
		return err
	}
	var err error
	if l.spec.Inject[StepLandlock] == InjectSkip {
		err = query() // the skip stands for the restrict call below
	} else {
		err = l.call(StepLandlock, query)
	}
	if err != nil {
		msg := fmt.Errorf("landlock_create_ruleset(VERSION): %w", err)
		if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) {
			msg = fmt.Errorf("landlock is not supported by this kernel or not enabled at boot: %w", err)
		}
		return 0, stepErr(StepLandlock, msg, LandlockFix)
	}
	if abi < 1 {
		return 0, stepErr(StepLandlock, fmt.Errorf("kernel reports Landlock ABI %d", abi), LandlockFix)
	}
	// Security: without a PID or network namespace, signals, abstract
	// Unix sockets and TCP towards IronVise and the container are
	// stopped by Landlock alone; an older ABI would leave them open.
	if l.spec.Container && abi < ContainerModeLandlockABI {
		return 0, stepErr(StepLandlock, fmt.Errorf("container mode needs Landlock ABI %d or newer (signal and abstract Unix socket scoping), the kernel has %d", ContainerModeLandlockABI, abi),
			"use Linux 6.12 or newer, or unset ECTO_SANDBOX_CONTAINER_MODE and allow the namespaces")
	}
	cfg := LandlockConfig(abi)
	rules := landlockRules(cfg, l.spec.Workspace, l.spec.Scratch, l.shm, l.spec.Container, l.spec.Overlay != nil)
	if l.spec.Proxy && cfg.HandledAccessNet&ll.AccessNetConnectTCP != 0 {
		// Security: defence in depth for proxy mode. Seccomp allows TCP
		// sockets and connect, and the namespace has only loopback, whose
		// one listener is the proxy; Landlock (ABI 4 or newer) then allows
		// connect to the proxy's port alone, so that a listener the
		// namespace might gain later is out of reach too. Binding stays
		// refused (no rule grants it).
		rules = append(rules, landlock.ConnectTCP(ProxyPort))
	}
	// Security: with the full preset, everything not granted below is
	// denied: writes anywhere but the scratch directory, reads outside the
	// listed roots, TCP bind/connect (ABI ≥ 4; UDP at ≥ 10), device ioctls
	// (≥ 5), signals and abstract Unix sockets towards processes outside
	// the sandbox (≥ 6), pathname Unix sockets (≥ 9).
	if err := l.call(StepLandlock, func() error { return restrictThread(cfg, rules) }); err != nil {
		return 0, stepErr(StepLandlock, fmt.Errorf("landlock restrict (ABI %d): %w", abi, err), LandlockFix)
	}
	return abi, nil
}

// restrictThread enforces the ruleset on the calling OS thread alone.
// The launch runs on one locked thread that execs the command, and execve
// keeps only the calling thread's credentials, so the command's domain is
// this thread's. go-landlock's Restrict also restricts every other thread
// of the launcher, which before Landlock ABI 8 takes two all-threads
// system calls that stop the Go runtime's threads one by one: about a
// quarter of the launcher's CPU per command, for threads that only ever
// run the launcher's own code and end at exec. no_new_privs, which the
// kernel requires first, is already set on this thread (step 3 of launch).
func restrictThread(cfg landlock.Config, rules []landlock.Rule) error {
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if fd < 0 {
		// Security: go-landlock returns no ruleset when nothing would be
		// restricted; the tier never runs a command without one.
		return errors.New("go-landlock built no ruleset: nothing would be restricted")
	}
	defer syscall.Close(fd)
	return ll.LandlockRestrictSelf(fd, flags)
}

// landlockRules grants the roots of docs/design/sandbox.md#linux-native-tier,
// each right intersected with what the ABI handles (a right the ABI does not
// know cannot be granted, and is not restricted either).
//
// In overlay mode the workspace is writable (rightsOverlay): the rule is
// made after the overlayfs covers the workspace path, so it grants the
// overlay's tree and never the real directory, nor the upper one.
func landlockRules(cfg landlock.Config, workspace, scratch string, shm, container, overlay bool) []landlock.Rule {
	h := cfg.HandledAccessFS
	etc := []landlock.Rule{landlock.PathAccess(rightsRead&h, "/etc")}
	if container {
		// Security: no mount namespace masks the secrets under /etc
		// here, and a command running as uid 0 owns them: /etc is
		// granted entry by entry, around them.
		etc = rulesExcept("/etc", append(hostKeys(), maskedFiles...), rightsRead&h, ll.AccessFSReadFile&h, 0)
	}
	rules := []landlock.Rule{
		landlock.PathAccess(rightsExec&h, systemExecDirs...).IgnoreIfMissing(),
		landlock.PathAccess(rightsRead&h, "/proc"), // SystemReadRoots, with /etc
	}
	rules = append(rules, etc...)
	rules = append(rules, []landlock.Rule{
		// The workspace is read-only: read files, list directories;
		// in overlay mode, the overlay's tree is writable too.
		landlock.PathAccess(workspaceRights(overlay)&h, workspace),
		landlock.PathAccess(rightsDevNull&h, "/dev/null"),
		landlock.PathAccess(ll.AccessFSReadFile&h, "/dev/zero", "/dev/urandom"),
		landlock.PathAccess(rightsScratch&h, scratch),
	}...)
	if shm {
		// /dev/shm is the scratch tmpfs here (mountScratch); the host's
		// is never granted.
		rules = append(rules, landlock.PathAccess(rightsScratch&h, devShm))
	}
	return rules
}

// maxSplitDepth bounds rulesExcept's descent (the excluded paths are a few
// levels below /etc).
const maxSplitDepth = 8

// rulesExcept grants dirRights on dir, or, when an excluded path lies
// below it, on each of its entries but the excluded ones, splitting the
// directories that hold excluded paths further. A file entry gets
// fileRights (a directory right on a file is an error). The grant is as
// the tree is now: an entry added to a split directory later is not
// readable, which fails closed. dir itself cannot be listed once split.
func rulesExcept(dir string, excluded []string, dirRights, fileRights landlock.AccessFSSet, depth int) []landlock.Rule {
	below := false
	for _, e := range excluded {
		if e == dir {
			return nil
		}
		if strings.HasPrefix(e, dir+"/") {
			below = true
		}
	}
	if !below || depth > maxSplitDepth {
		if depth > maxSplitDepth {
			return nil // deeper than any excluded path: grant nothing
		}
		return []landlock.Rule{landlock.PathAccess(dirRights, dir).IgnoreIfMissing()}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var rules []landlock.Rule
	for _, ent := range ents {
		p := dir + "/" + ent.Name()
		if slices.Contains(excluded, p) {
			continue
		}
		fi, err := os.Stat(p) // the rule follows a symlink too
		switch {
		case err != nil:
			continue
		case fi.IsDir():
			rules = append(rules, rulesExcept(p, excluded, dirRights, fileRights, depth+1)...)
		default:
			rules = append(rules, landlock.PathAccess(fileRights, p).IgnoreIfMissing())
		}
	}
	return rules
}

// workspaceRights are the Landlock rights on the workspace.
func workspaceRights(overlay bool) landlock.AccessFSSet {
	if overlay {
		return rightsOverlay
	}
	return rightsRead
}
