//go:build linux

package native

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
)

// The only file-system rights a self-confined process keeps: reading
// files, and listing directories.
const (
	rightsReadFile = ll.AccessFSReadFile
	rightsReadDir  = ll.AccessFSReadFile | ll.AccessFSReadDir
)

// ConfineSelf confines the calling process, all of its threads, for the
// rest of its life, to p (see [HTTPSClient]). It fails, having changed
// nothing, when the kernel lacks Landlock or seccomp or the profile is
// invalid; an error after the first irreversible step means the process is
// partly confined and must exit.
func ConfineSelf(p Profile) (Confinement, error) {
	if err := p.validate(); err != nil {
		return Confinement{}, err
	}
	c := Confinement{Profile: p.name}
	// Everything that can fail for want of kernel support is checked
	// before the first irreversible step.
	prof, err := seccomp.BuildHTTPSClient(os.Getpid())
	if err != nil {
		return Confinement{}, fmt.Errorf("native: confine: seccomp: %w", err)
	}
	abi, err := launch.LandlockABI()
	if err != nil || abi < 1 {
		if err == nil {
			err = fmt.Errorf("kernel reports Landlock ABI %d", abi)
		}
		return Confinement{}, fmt.Errorf("native: confine: landlock is not supported by this kernel or not enabled at boot: %w; fix: %s", err, launch.LandlockFix)
	}
	if !seccompEnabled() {
		return Confinement{}, errors.New("native: confine: seccomp filtering is not enabled in this kernel; fix: use a kernel built with CONFIG_SECCOMP_FILTER=y")
	}
	rules, granted, err := p.landlockRules()
	if err != nil {
		return Confinement{}, err
	}

	// no_new_privs and the seccomp filter are per thread: the sequence
	// runs on one OS thread, and both the Landlock restriction (through
	// go-landlock) and the filter (TSYNC) then cover every thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	// Security: no_new_privs first, so nothing this process could still
	// exec would gain privileges (and seccomp requires it).
	if err := kernel.SetNoNewPrivs(); err != nil {
		return Confinement{}, fmt.Errorf("native: confine: prctl PR_SET_NO_NEW_PRIVS: %w", err)
	}
	// Security: every file-system right of the ABI is handled and only
	// reading the granted paths is allowed, so nothing can be written,
	// created, removed or executed anywhere, and nothing else read (not
	// the ledger, not ~/.ssh, not /proc/<pid>/environ of anyone). TCP bind
	// (and UDP bind at ABI ≥ 10) is handled with no rule: denied.
	// Connecting stays open (see the package documentation). Signals and
	// abstract Unix sockets towards other processes are scoped away
	// (ABI ≥ 6).
	preset := launch.LandlockConfig(abi)
	cfg := landlock.Config{
		HandledAccessFS:  preset.HandledAccessFS,
		HandledAccessNet: preset.HandledAccessNet &^ (ll.AccessNetConnectTCP | ll.AccessNetConnectSendUDP),
		Scoped:           preset.Scoped,
	}
	if err := cfg.Restrict(rules...); err != nil {
		return Confinement{}, fmt.Errorf("native: confine: landlock restrict (ABI %d): %w", abi, err)
	}
	c.LandlockABI, c.ReadPaths = abi, granted
	nnp, err := kernel.NoNewPrivs()
	if err != nil || !nnp {
		return Confinement{}, bug(fmt.Errorf("no_new_privs is not set after prctl: %w", err))
	}
	c.NoNewPrivs = true
	// Security: the filter comes last (it denies prctl and the Landlock
	// calls) and TSYNC puts it on every thread at once.
	if err := kernel.SeccompInstall(prof.Filter); err != nil {
		return Confinement{}, fmt.Errorf("native: confine: the kernel rejected the seccomp filter: seccomp(SET_MODE_FILTER, TSYNC): %w", err)
	}
	c.SeccompSHA256 = prof.SHA256
	return c, nil
}

// landlockRules grants read access to the profile's paths: the preset's
// where they exist, the extra ones always (a missing one is an error).
// Directories get the right to be listed too. The type comes from a stat
// before go-landlock opens the path; should the path change type in
// between, the kernel rejects the rule and ConfineSelf fails.
func (p Profile) landlockRules() ([]landlock.Rule, []string, error) {
	var files, dirs, granted []string
	add := func(x string, required bool) error {
		fi, err := os.Stat(x)
		switch {
		case err == nil:
		case !required && errors.Is(err, os.ErrNotExist):
			return nil
		default:
			return fmt.Errorf("native: confine: read path: %w", err)
		}
		if fi.IsDir() {
			dirs = append(dirs, x)
		} else {
			files = append(files, x)
		}
		granted = append(granted, x)
		return nil
	}
	for _, x := range slices.Concat(p.readFiles, p.readDirs) {
		if err := add(x, false); err != nil {
			return nil, nil, err
		}
	}
	for _, x := range p.extra {
		if err := add(x, true); err != nil {
			return nil, nil, err
		}
	}
	var rules []landlock.Rule
	if len(files) > 0 {
		rules = append(rules, landlock.PathAccess(rightsReadFile, files...))
	}
	if len(dirs) > 0 {
		rules = append(rules, landlock.PathAccess(rightsReadDir, dirs...))
	}
	return rules, granted, nil
}

// bug marks an impossible kernel state.
func bug(err error) error {
	return fmt.Errorf("native: BUG: %w", err)
}
