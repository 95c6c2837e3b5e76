package guard

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// workerSysProcAttr makes the kernel kill the worker when the host dies, so
// a crashed host leaves no guard process holding a key. (Pdeathsig follows
// the thread that started the child; the Go runtime only retires threads
// that exit locked, which this package never does.)
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// softwareEnclaveSupported reports whether this host can run and check a
// software-enclave worker.
func softwareEnclaveSupported() error { return nil }

// checkWorkerProcess checks, from outside, the kernel's view of a
// software-enclave worker that has sent its hello: its memory is locked,
// no_new_privs is set, a seccomp filter is installed, and (when it runs
// as another user than root, where ownership tells) its /proc entries
// belong to root because it is not dumpable. It returns the names of the
// checks made.
func checkWorkerProcess(pid int) ([]string, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/status")
	if err != nil {
		return nil, fmt.Errorf("read %s/status: %w", dir, err)
	}
	st := parseStatus(string(b))
	var bad, done []string
	// Security: the worker's own "memory_locked" is not taken on trust; the
	// kernel's count of its locked memory must agree. Locking one page
	// (as a Secret does) is not enough: after mlockall every mapping is
	// locked, so VmLck (whole locked mappings) covers VmRSS (resident
	// pages) but for the few pages that cannot be locked (vDSO).
	lck, errL := statusKB(st["VmLck"])
	rss, errR := statusKB(st["VmRSS"])
	if errL != nil || errR != nil || lck == 0 || lck+vmLckSlackKB < rss {
		bad = append(bad, fmt.Sprintf("VmLck is %q with VmRSS %q: not all of the worker's memory is locked", st["VmLck"], st["VmRSS"]))
	}
	done = append(done, "/proc/<pid>/status VmLck")
	if st["NoNewPrivs"] != "1" {
		bad = append(bad, fmt.Sprintf("NoNewPrivs is %q, want 1", st["NoNewPrivs"]))
	}
	done = append(done, "/proc/<pid>/status NoNewPrivs")
	// Seccomp 2 is filter mode: a worker that only claims its filter gets
	// no prompts.
	if st["Seccomp"] != "2" {
		bad = append(bad, fmt.Sprintf("Seccomp is %q, want 2 (filter)", st["Seccomp"]))
	}
	done = append(done, "/proc/<pid>/status Seccomp")
	// The kernel gives a non-dumpable process's /proc files (not the
	// /proc/<pid> directory itself) to root. For a worker that runs as
	// root that says nothing, so the check is made only for another user.
	if uid := strings.Fields(st["Uid"]); len(uid) > 0 && uid[0] != "0" {
		f := dir + "/environ"
		fi, err := os.Stat(f)
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", f, err)
		}
		sys, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil, errors.New("stat " + f + ": no owner")
		}
		if sys.Uid != 0 {
			bad = append(bad, fmt.Sprintf("%s belongs to uid %d, not root: the worker is dumpable", f, sys.Uid))
		}
		done = append(done, "/proc/<pid>/environ owner (not dumpable)")
	}
	if bad != nil {
		return nil, fmt.Errorf("%s: %s", dir, strings.Join(bad, "; "))
	}
	return done, nil
}

// vmLckSlackKB is how much of a worker's resident memory may lie outside
// locked mappings (the vDSO and vvar pages, and a page or two mapped
// between the two fields' reads).
const vmLckSlackKB = 1024

// statusKB parses a "<n> kB" field of /proc/<pid>/status.
func statusKB(v string) (uint64, error) {
	return strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64)
}

// parseStatus splits /proc/<pid>/status into its fields.
func parseStatus(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
