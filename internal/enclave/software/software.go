// Package software is Level 1 of the guard's enclave ("software-hardened",
// docs/enclaves.md): the guard worker process hardens itself so that its
// key, the prompts it builds and the replies it reads stay in its own
// memory, and reports what it put in force so the host can check it.
//
// # What Harden does
//
// [Harden] makes the calling process, for the rest of its life:
//
//   - not dumpable (prctl PR_SET_DUMPABLE 0): the kernel writes no core
//     dump of it, its /proc/<pid> files (mem, environ, maps …) belong to
//     root, and a process of the same user without CAP_SYS_PTRACE can no
//     longer ptrace it or read its memory;
//   - limited to a core size of 0 (RLIMIT_CORE), so that even a later
//     PR_SET_DUMPABLE could not produce a dump;
//   - memory-locked (mlockall MCL_CURRENT|MCL_FUTURE): every page it has
//     and every page it will map stays in RAM and never reaches swap.
//
// It then reads the dumpable flag and the core limit back from the kernel
// and returns them in a [Hardening]. A step that fails is an error naming
// the step, the reason and the fix ([HardenError]); nothing is silently
// skipped.
//
// A [Secret] is a buffer outside the Go heap: its own anonymous mapping,
// locked, excluded from core dumps (MADV_DONTDUMP) and wiped in a forked
// child (MADV_WIPEONFORK), zeroed and unmapped by Close.
//
// # Usage
//
//	h, err := software.Harden()   // first, before any secret is read
//	if err != nil { return err }  // exit: never run unhardened
//	key, err := software.NewSecret(32)
//	defer key.Close()
//	_, err = io.ReadFull(pipe, key.Bytes())
//
// # Limitations
//
// Harden protects memory against other processes and against swap and
// dumps; it does not make a process's own heap forgettable. Go strings and
// the copies that encoding/json, net/http and crypto/tls make cannot be
// zeroed; they are protected only by being in a locked, non-dumpable
// process. Root (or any holder of CAP_SYS_PTRACE) and the kernel still see
// everything; a hibernation image still holds locked pages. Only Linux is
// supported: elsewhere Harden and NewSecret fail with an error wrapping
// errors.ErrUnsupported.
package software

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// Hardening is what [Harden] put in force, as read back from the kernel.
type Hardening struct {
	// MemoryLocked says mlockall(MCL_CURRENT|MCL_FUTURE) succeeded.
	MemoryLocked bool
	// Dumpable is PR_GET_DUMPABLE after hardening (false).
	Dumpable bool
	// CoreLimit is the soft RLIMIT_CORE after hardening (0).
	CoreLimit uint64
}

// HardenError is a hardening step that failed. Its text names the step,
// the kernel's reason and what the operator can do about it.
type HardenError struct {
	// Step is the call that failed, for example "mlockall".
	Step string
	// Err is the kernel's reason.
	Err error
	// Fix says how to make the step succeed, or how to run without it.
	Fix string
}

// Error implements error.
func (e *HardenError) Error() string {
	s := "software enclave: " + e.Step + ": " + e.Err.Error()
	if e.Fix != "" {
		s += "; fix: " + e.Fix
	}
	return s
}

// Unwrap returns the kernel's reason.
func (e *HardenError) Unwrap() error { return e.Err }

// FixNone is the way out every fix offers: run the guard without the
// software enclave.
const FixNone = "or set GUARD_ENCLAVE=none to run the guard worker without the software enclave"

// SelfExecutable is the path a process reads to hash its own executable:
// on Linux the kernel's link to the very file that was executed, whatever
// happened to its path since.
const SelfExecutable = "/proc/self/exe"

// FileSHA256 returns the lowercase hex SHA-256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("software enclave: hash %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("software enclave: hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Secret is a byte buffer kept outside the Go heap (see the package
// documentation). Create it with [NewSecret]; the caller must call Close.
// A Secret is not safe for concurrent use with Close.
type Secret struct {
	mem []byte // the whole mapping, page-rounded; nil once closed
	n   int    // bytes in use
}

// Bytes returns the secret's bytes, to be filled or read in place. The
// slice is valid until Close; copies of it are ordinary heap memory.
func (s *Secret) Bytes() []byte {
	if s == nil || s.mem == nil {
		return nil
	}
	return s.mem[:s.n:s.n]
}

// Len returns the secret's size in bytes.
func (s *Secret) Len() int { return s.n }
