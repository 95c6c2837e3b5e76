//go:build linux

package software

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Harden hardens the calling process for the rest of its life (see the
// package documentation) and returns what the kernel reports afterwards.
// The three settings are process-wide (they belong to the memory map and
// the signal struct, not to a thread), so no thread needs locking. On an
// error the process may be partly hardened and must exit.
func Harden() (Hardening, error) {
	// Security: not dumpable first, so that from here on no same-user
	// process can ptrace this one or read /proc/<pid>/mem while the rest
	// happens, and no crash leaves a core file with its memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return Hardening{}, &HardenError{Step: "prctl PR_SET_DUMPABLE 0", Err: err, Fix: "use a Linux kernel that allows it (any since 2.6) " + FixNone}
	}
	// Security: a core limit of 0 is the second lock on dumps: were the
	// dumpable flag ever set again (execve of a readable binary does so),
	// still no core would be written.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0}); err != nil {
		return Hardening{}, &HardenError{Step: "setrlimit RLIMIT_CORE 0", Err: err, Fix: FixNone}
	}
	// Security: every page now and every page mapped later stays in RAM,
	// so the key, the prompts and the replies, and every copy the Go heap
	// makes of them, never reach a swap device, where they would outlive
	// the process and could be read offline.
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE); err != nil {
		return Hardening{}, mlockallError(err)
	}
	h := Hardening{MemoryLocked: true}
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		return Hardening{}, &HardenError{Step: "prctl PR_GET_DUMPABLE", Err: err, Fix: FixNone}
	}
	h.Dumpable = d != 0
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil {
		return Hardening{}, &HardenError{Step: "getrlimit RLIMIT_CORE", Err: err, Fix: FixNone}
	}
	h.CoreLimit = lim.Cur
	if h.Dumpable || h.CoreLimit != 0 {
		return Hardening{}, bug(fmt.Errorf("after hardening the kernel reports dumpable=%v and RLIMIT_CORE=%d", h.Dumpable, h.CoreLimit))
	}
	return h, nil
}

// mlockallError explains a failed mlockall. ENOMEM and EPERM mean the
// process may not lock that much: the kernel compares all of its mappings
// (VmSize, reservations included) with RLIMIT_MEMLOCK unless it holds
// CAP_IPC_LOCK.
func mlockallError(err error) error {
	e := &HardenError{Step: "mlockall(MCL_CURRENT|MCL_FUTURE)", Err: err}
	if !errors.Is(err, unix.ENOMEM) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EAGAIN) {
		e.Fix = FixNone
		return e
	}
	limit := "unknown"
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim) == nil {
		limit = formatLimit(lim.Cur)
	}
	maps := "an unknown number of"
	if n, ok := vmSize(); ok {
		maps = strconv.FormatUint(n, 10)
	}
	e.Err = fmt.Errorf("%w: RLIMIT_MEMLOCK is %s; the worker maps %s bytes", err, limit, maps)
	e.Fix = "raise the limit (ulimit -l unlimited / LimitMEMLOCK=infinity) or grant CAP_IPC_LOCK, " + FixNone
	return e
}

func formatLimit(v uint64) string {
	if v == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10) + " bytes"
}

// vmSize returns the process's VmSize in bytes, from /proc/self/status.
func vmSize() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmSize:"))
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		return kb * 1024, err == nil
	}
	return 0, false
}

// NewSecret returns an n-byte Secret, zero-filled, in its own anonymous
// mapping that is locked in RAM, left out of core dumps and wiped in any
// child the process forks. It works in a process that was not hardened
// too.
func NewSecret(n int) (*Secret, error) {
	if n <= 0 {
		return nil, fmt.Errorf("software enclave: secret of %d bytes", n)
	}
	page := os.Getpagesize()
	size := (n + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("software enclave: mmap secret: %w", err)
	}
	// Security: locked so the secret never reaches swap, even in a process
	// that did not call mlockall.
	if err := unix.Mlock(mem); err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("software enclave: mlock secret: %w; fix: raise RLIMIT_MEMLOCK or grant CAP_IPC_LOCK", err)
	}
	// Security: never in a core dump, even one the dumpable flag allows.
	if err := unix.Madvise(mem, unix.MADV_DONTDUMP); err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("software enclave: madvise secret MADV_DONTDUMP: %w", err)
	}
	// Security: a forked child sees zeros here, not the parent's key.
	if err := unix.Madvise(mem, unix.MADV_WIPEONFORK); err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("software enclave: madvise secret MADV_WIPEONFORK: %w; fix: use Linux 4.14 or later", err)
	}
	return &Secret{mem: mem, n: n}, nil
}

// Close zeroes the secret and unmaps it. Later calls do nothing.
func (s *Secret) Close() error {
	if s == nil || s.mem == nil {
		return nil
	}
	clear(s.mem)
	mem := s.mem
	s.mem = nil
	if err := unix.Munmap(mem); err != nil {
		return fmt.Errorf("software enclave: munmap secret: %w", err)
	}
	return nil
}

// bug marks an impossible kernel state.
func bug(err error) error {
	return fmt.Errorf("software enclave: BUG: %w", err)
}
