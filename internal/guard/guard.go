// Package guard is check 4: a second LLM, in a separate confined process,
// reviews every intent that passed the deterministic checks
// (docs/design/checks.md#guard-protocol, docs/design/agent.md#guard-worker).
//
// # Why a separate process
//
// The guard reads attacker-influenced text (the goal, the intent the
// primary model wrote) and talks to the network. Running it as its own
// process, `ironvise guard-worker`, lets that process drop everything it does
// not need (no exec, no ptrace, no file writes) and keeps a compromised
// guard away from the host's keys and ledger. The host ([Host]) and the
// worker ([Serve]) speak an authenticated JSON-lines protocol over the
// worker's stdin and stdout.
//
// # Protocol
//
// One JSON object per '\n'-terminated UTF-8 line of at most [MaxLineBytes]:
//
//	{"payload":{…},"mac":"<64 hex>"}
//
// mac = HMAC-SHA256(key, label ‖ raw payload bytes), with label
// [RequestLabel] or [ResponseLabel], so a request can never be reflected
// back as a response. The key is 32 bytes from crypto/rand, new for every
// worker, handed over hex-encoded in GUARD_HMAC_KEY, which the worker unsets
// at once. The receiver takes the payload as raw bytes, verifies the MAC
// with hmac.Equal over exactly those bytes, and only then decodes the
// payload, strictly (exact keys, no duplicates, no nulls, no trailing data).
// Request nonces start at 1 and rise by one; the worker accepts only a nonce
// above the last one it accepted and a timestamp within [MaxClockSkew] of
// its clock; it answers DENY with error replayed_nonce, stale_request or
// bad_mac otherwise.
//
// # Software enclave
//
// With HostOptions.Enclave set to enclave.LevelSoftware (Level 1,
// docs/enclaves.md) the key travels on an inherited pipe (descriptor
// [SecretsFD], announced by [SecretsFDEnv]) instead of the environment, the
// worker hardens itself (internal/enclave/software: memory locked, not
// dumpable, no core) and confines itself before building its model client,
// and its first line is a hello sealed under [HelloLabel] carrying an
// enclave.Measurement. The host checks the measurement against its own
// hash of the executable and against the worker's /proc/<pid>/status, and
// kills a worker that fails any check; that failure is [ErrEnclave] and
// ends the session's guard. [Host.Attestation] returns the first worker's
// measurement.
//
// # Usage
//
//	plan, err := guard.Resolve(cfg.Guard, cfg.LLM.Backend, guard.Flags{})  // startup error, or skip
//	opt, err := guard.ConfigHostOptions(lookup, plan.Guard, cfg.LLM)
//	opt.Logger = log
//	h, err := guard.NewHost(opt)
//	defer h.Close(ctx)
//	v := h.Review(ctx, check.GuardRequest{…})  // implements check.Guard
//	if h.Err() != nil { /* second worker loss: circuit_breaker guard_unavailable */ }
//
// # Limitations
//
// The worker zeroes the request lines it reads and the response bytes it
// writes, but the strings encoding/json, net/http and crypto/tls copy
// them into cannot be zeroed, nor the key material crypto/hmac keeps per
// message; in the software enclave they are protected by the worker's
// locked, non-dumpable memory, and otherwise not at all.
// One request is in flight per Host (a session's steps are sequential). The
// worker's OS confinement is applied by the command that runs it
// (internal/cli), not by this package. The mock guard's script position is
// per worker process: after a restart it starts from its first guard line.
package guard

import (
	"encoding/json"
	"errors"
	"time"
)

// Protocol constants (docs/design/checks.md#guard-protocol).
const (
	// RequestLabel and ResponseLabel prefix the MAC input, binding each MAC
	// to one direction.
	RequestLabel  = "ironvise-guard/1 request\n"
	ResponseLabel = "ironvise-guard/1 response\n"
	// MaxLineBytes bounds one protocol line, without its '\n'.
	MaxLineBytes = 1 << 20
	// MaxClockSkew is how far a request's ts_ms may be from the worker's
	// clock.
	MaxClockSkew = 30 * time.Second
	// KeyBytes is the size of the per-worker HMAC key.
	KeyBytes = 32
	// MaxReasonRunes bounds the reason of a response.
	MaxReasonRunes = 500
	// MaxRawBytes bounds the raw model reply carried in a response.
	MaxRawBytes = 512
	// MaxOutputTokens caps the guard model's reply.
	MaxOutputTokens = 64
	// BoundaryHexChars is the length of the random marker tag.
	BoundaryHexChars = 16
	// StderrCapBytes caps the worker stderr copied to the host log per
	// session.
	StderrCapBytes = 64 << 10
	// LLMMargin is how much less time the worker's LLM call gets than the
	// host's per-request timeout, so the worker can still answer
	// guard_backend_error before the host gives up.
	LLMMargin = 5 * time.Second
	// DefaultTimeout is GUARD_TIMEOUT_SECS's default.
	DefaultTimeout = 30 * time.Second
	// MaxWorkerLosses is the number of guard_unavailable losses after which
	// the session must abort: one replacement, then stop
	// (docs/design/agent.md#guard-worker).
	MaxWorkerLosses = 2
	// KeyEnv carries the hex key to the worker.
	KeyEnv = "GUARD_HMAC_KEY"
	// WorkerArg is the argument that runs the worker.
	WorkerArg = "guard-worker"
)

// Verdicts on the wire.
const (
	VerdictAllow = "ALLOW"
	VerdictDeny  = "DENY"
)

// Error values of a response. The first three are
// docs/design/checks.md#guard-protocol's; the others are IronVise's:
// bad_request (a line that is not a well-formed envelope or payload),
// backend_error (the LLM call failed) and unparseable (the model's reply is
// neither ALLOW nor DENY: <reason>).
const (
	ErrCodeReplayedNonce = "replayed_nonce"
	ErrCodeStaleRequest  = "stale_request"
	ErrCodeBadMAC        = "bad_mac"
	ErrCodeBadRequest    = "bad_request"
	ErrCodeBackend       = "backend_error"
	ErrCodeUnparseable   = "unparseable"
)

// Request is the request payload.
type Request struct {
	Nonce     uint64     `json:"nonce"`
	TsMs      int64      `json:"ts_ms"`
	SessionID string     `json:"session_id"`
	Step      int        `json:"step"`
	Goal      string     `json:"goal"`
	Intent    WireIntent `json:"intent"`
	Flags     []string   `json:"flags"`
}

// WireIntent is the intent as the guard sees it: the wire form of
// intent.Intent.
type WireIntent struct {
	Action        string          `json:"action"`
	Params        json.RawMessage `json:"params"`
	Justification string          `json:"justification"`
	Reasoning     string          `json:"reasoning"`
}

// Response is the response payload.
type Response struct {
	Nonce     uint64 `json:"nonce"`
	Verdict   string `json:"verdict"`
	Reason    string `json:"reason"`
	Raw       string `json:"raw"`
	Model     string `json:"model"`
	LatencyMs int64  `json:"latency_ms"`
	Error     string `json:"error,omitempty"`
}

// Sentinel errors, compared with errors.Is.
var (
	// ErrBadMAC means an envelope's MAC does not verify.
	ErrBadMAC = errors.New("ironvise/guard: bad MAC")
	// ErrMalformed means a line is not a well-formed envelope or payload.
	ErrMalformed = errors.New("ironvise/guard: malformed message")
	// ErrLineTooLong means a line exceeds MaxLineBytes.
	ErrLineTooLong = errors.New("ironvise/guard: line exceeds 1 MiB")
	// ErrWorkerLost means the guard worker was lost twice in this session
	// (guard_unavailable); the session must abort with circuit_breaker
	// reason guard_unavailable.
	ErrWorkerLost = errors.New("ironvise/guard: guard worker lost twice")
	// ErrClosed means the Host was closed.
	ErrClosed = errors.New("ironvise/guard: host closed")
	// ErrEnclave means a software-enclave worker could not be started or
	// did not prove its hardening (hello, measurement or /proc checks);
	// the session must abort, reason guard_unavailable.
	ErrEnclave = errors.New("ironvise/guard: the guard worker's software enclave did not check out")
)

// LLMTimeout returns the worker's LLM budget for a host timeout: 5 s less,
// so the worker can report a backend failure before the host times out.
// When the timeout leaves less than a second after the margin there is no
// room for it; the LLM call then gets the whole timeout, and because the
// worker's clock starts after the host's, the host's deadline decides
// (guard_timeout).
func LLMTimeout(hostTimeout time.Duration) time.Duration {
	if d := hostTimeout - LLMMargin; d >= time.Second {
		return d
	}
	return hostTimeout
}
