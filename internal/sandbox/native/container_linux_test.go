//go:build linux

package native

import (
	"os"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestContainerModeEscapeSuiteAsUser runs the escape suite's key attempts
// in container mode (no namespaces), with ECTO_SANDBOX_USER so that
// RLIMIT_NPROC binds and the fork bomb is bounded on a host without a pids
// limit.
func TestContainerModeEscapeSuiteAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching user needs root")
	}
	runEscapeSuite(t, sandbox.Options{User: "nobody", ContainerMode: true}, true)
}

// TestContainerModeEscapeSuite runs the whole escape suite in container
// mode as the user the tests run as.
func TestContainerModeEscapeSuite(t *testing.T) {
	runEscapeSuite(t, sandbox.Options{ContainerMode: true}, false)
}

// notInContainerMode says why an escape case does not apply to opts in
// container mode, and which test covers what it would.
func notInContainerMode(name string, opts sandbox.Options) (string, bool) {
	if !opts.ContainerMode {
		return "", false
	}
	switch name {
	case "proc_parent_and_init_environ_mem":
		return "container mode shares the container's /proc: TestContainerModeCannotReachIronVise", true
	case "memfd_and_scratch_exec":
		return "the scratch directory is not a noexec mount in container mode: TestContainerModeScratchExec", true
	case "fork_bomb":
		if opts.User == "" && os.Geteuid() == 0 {
			return "RLIMIT_NPROC does not bind root and this host's cgroup may have no pids limit: TestContainerModeEscapeSuiteAsUser runs it", true
		}
	}
	return "", false
}
