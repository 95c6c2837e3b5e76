// Package enclave names the confidentiality boundaries the guard model's
// inference can run in, and the record a session keeps of the one it used
// (docs/enclaves.md).
//
// # Levels
//
//   - [LevelNone]: the guard worker as always, confined by seccomp and
//     Landlock (internal/cli), talking to its model directly.
//   - [LevelSoftware] (Level 1): the same worker, hardened: all its memory
//     locked (never swapped), not dumpable (no core dump, no ptrace by
//     same-user processes), its key handed over a pipe instead of the
//     environment, and a [Measurement] of the binary and its confinement
//     sent to the host, which checks it against the kernel's view of the
//     worker.
//   - [LevelApple] (Level 2): Apple's Hypervisor.framework needs cgo, which
//     this build does not have; selecting it is an error.
//   - [LevelRemote] (Level 3): the guard's prompts go to a remote hardware
//     enclave (AWS Nitro) over an AEAD channel keyed from an attested key
//     exchange ([Remote]).
//
// # Limitations
//
// A software measurement is reported by the worker itself and checked by
// the host against /proc; it proves which binary and profile ran on an
// honest host, not to a third party. Only a remote attestation can be
// verified offline against a hardware vendor's root.
package enclave

import (
	"errors"
	"time"
)

// Level is a GUARD_ENCLAVE value.
type Level string

// The levels.
const (
	// LevelNone runs the guard worker without an enclave (the default).
	LevelNone Level = "none"
	// LevelSoftware is Level 1, the hardened guard worker.
	LevelSoftware Level = "software"
	// LevelApple is Level 2, Apple's Hypervisor.framework (not in this build).
	LevelApple Level = "apple"
	// LevelRemote is Level 3, a remote AWS Nitro enclave.
	LevelRemote Level = "remote"
)

// ErrAppleUnsupported is returned for enclave.LevelApple.
var ErrAppleUnsupported = errors.New("enclave: the Apple Hypervisor enclave (Level 2) needs cgo and Hypervisor.framework, which this build does not include (IronVise ships without cgo so that one binary cross-compiles); choose GUARD_ENCLAVE=software or remote")

// Attestation is what a session records, in its genesis, of the enclave its
// guard ran in. Exactly one of Measurement and Remote is set, matching
// Level.
type Attestation struct {
	// Level is LevelSoftware or LevelRemote.
	Level Level `json:"level"`
	// Measurement is Level 1's report.
	Measurement *Measurement `json:"measurement,omitempty"`
	// Remote is Level 3's attestation.
	Remote *Remote `json:"remote,omitempty"`
}

// Measurement is what a Level 1 worker reports of itself after hardening
// and confinement, and what the host checked of it from outside.
type Measurement struct {
	// WorkerSHA256 is the hex SHA-256 of the worker's executable
	// (/proc/self/exe), equal to the host's own hash of the file it started.
	WorkerSHA256 string `json:"worker_sha256"`
	// Profile, LandlockABI, SeccompSHA256 and NoNewPrivs describe the
	// worker's confinement (internal/sandbox/native.Confinement).
	Profile       string `json:"profile"`
	LandlockABI   int    `json:"landlock_abi"`
	SeccompSHA256 string `json:"seccomp_sha256"`
	NoNewPrivs    bool   `json:"no_new_privs"`
	// MemoryLocked says mlockall(MCL_CURRENT|MCL_FUTURE) succeeded.
	MemoryLocked bool `json:"memory_locked"`
	// Dumpable is the worker's PR_GET_DUMPABLE after hardening (false).
	Dumpable bool `json:"dumpable"`
	// CoreLimit is the worker's RLIMIT_CORE after hardening (0).
	CoreLimit uint64 `json:"core_limit"`
	// SecretsOverPipe says the key arrived on a pipe, not the environment.
	SecretsOverPipe bool `json:"secrets_over_pipe"`
	// HostChecked lists what the host verified from outside the worker
	// (for example "/proc/<pid>/status VmLck", "executable hash").
	HostChecked []string `json:"host_checked"`
}

// Remote is a verified Level 3 attestation.
type Remote struct {
	// URL is ECTO_ENCLAVE_REMOTE_URL.
	URL string `json:"url"`
	// Document is the raw COSE_Sign1 attestation document.
	Document []byte `json:"document"`
	// Nonce is the fresh nonce IronVise sent; the document carries it.
	Nonce []byte `json:"nonce"`
	// ClientPublicKey is IronVise's ephemeral X25519 key, bound by the
	// document's user_data.
	ClientPublicKey []byte `json:"client_public_key"`
	// EnclavePublicKey is the document's public_key (X25519).
	EnclavePublicKey []byte `json:"enclave_public_key"`
	// PinnedPCRs are the configured PCR values (index to hex), each equal to
	// the document's.
	PinnedPCRs map[int]string `json:"pinned_pcrs"`
	// ModuleID and Timestamp are the document's.
	ModuleID  string    `json:"module_id"`
	Timestamp time.Time `json:"timestamp"`
}
