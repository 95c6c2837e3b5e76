package guard

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/remote"
	"github.com/ironvise/ironvise/internal/enclave/software"
	"github.com/ironvise/ironvise/internal/verdict"
)

// HostOptions configure a Host.
type HostOptions struct {
	// Executable is the ironvise binary; "" means os.Executable(). Tests
	// point it at a freshly built binary.
	Executable string
	// Args are the worker's arguments; nil means {"guard-worker"}.
	Args []string
	// Env is the worker's whole environment except GUARD_HMAC_KEY, which
	// the Host adds per worker (or GUARD_SECRETS_FD, in the software
	// enclave). WorkerEnv builds it.
	Env []string
	// Enclave is the worker's enclave level: "" or enclave.LevelNone for
	// the plain worker, enclave.LevelSoftware for Level 1, where the key
	// goes over a pipe and every worker must prove its hardening before it
	// is used (a failure is ErrEnclave: the session must abort). Other
	// levels are refused by NewHost.
	Enclave enclave.Level
	// Remote is the remote enclave to attest for enclave.LevelRemote
	// (Level 3): before each worker starts, the host attests the enclave
	// with a fresh nonce and hands the worker the channel keyed from that
	// exchange; the worker is hardened as in Level 1 as well, since it
	// holds the channel's keys and the prompts in clear.
	Remote *remote.Config
	// Timeout is the per-request timeout (GUARD_TIMEOUT_SECS); 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Logger receives worker failures and the worker's stderr; nil
	// discards.
	Logger *slog.Logger
	// Now replaces the clock in tests.
	Now func() time.Time
}

// Host is the host side of the guard: it runs one worker process per
// session and implements check.Guard. Every failure is a deny. Create it
// with NewHost; the caller must call Close.
type Host struct {
	opt HostOptions
	log *slog.Logger
	now func() time.Time

	// stderrLeft is the worker stderr still allowed into the log this
	// session (StderrCapBytes at the start).
	stderrLeft atomic.Int64

	// hashPath is the file whose SHA-256 a software-enclave worker must
	// report; "" means opt.Executable. Tests that start the worker through
	// a wrapper point it at the real worker binary.
	hashPath string
	// prepare, when set, adjusts each worker's command before it starts
	// (tests: run it as another user).
	prepare func(*exec.Cmd)

	// mu serialises requests: one in flight per session.
	mu     sync.Mutex
	w      *workerProc // guarded by mu; nil when no worker runs
	lost   int         // guarded by mu; guard_unavailable losses
	closed bool        // guarded by mu
	// attestation is the first software-enclave worker's checked
	// measurement. guarded by mu.
	attestation *enclave.Attestation
	// enclaveErr is the software-enclave failure that ended the session's
	// guard; once set no worker is started again. guarded by mu.
	enclaveErr error
}

var _ check.Guard = (*Host)(nil)

// NewHost returns a Host. It starts no process: the first Review (or Start)
// does.
func NewHost(opt HostOptions) (*Host, error) {
	if opt.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("guard: locate the ironvise binary: %w", err)
		}
		opt.Executable = exe
	}
	if opt.Args == nil {
		opt.Args = []string{WorkerArg}
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	switch opt.Enclave {
	case "":
		opt.Enclave = enclave.LevelNone
	case enclave.LevelNone:
	case enclave.LevelSoftware, enclave.LevelRemote:
		if err := softwareEnclaveSupported(); err != nil {
			return nil, err
		}
		if (opt.Enclave == enclave.LevelRemote) != (opt.Remote != nil) {
			return nil, fmt.Errorf("guard: enclave level %q with remote configuration %v: the remote level needs it, the others take none", opt.Enclave, opt.Remote != nil)
		}
	case enclave.LevelApple:
		return nil, enclave.ErrAppleUnsupported
	default:
		return nil, fmt.Errorf("guard: enclave level %q is not supported by the guard host (none, software or remote)", opt.Enclave)
	}
	h := &Host{opt: opt, log: opt.Logger, now: opt.Now}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.stderrLeft.Store(StderrCapBytes)
	return h, nil
}

// Start starts the worker now rather than at the first Review, so a broken
// setup shows at session start. A failure counts as a lost worker. In the
// software enclave a failure wraps ErrEnclave: the worker did not prove
// its hardening, and the caller must abort the session.
func (h *Host) Start(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	if h.enclaveErr != nil {
		return h.enclaveErr
	}
	if h.w != nil {
		return nil
	}
	return h.startLocked(ctx)
}

// Attestation returns what the first software-enclave worker measured of
// itself and what the host checked of it, for the session's record; nil
// before a worker passed the checks, and always nil without an enclave.
func (h *Host) Attestation() *enclave.Attestation {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.attestation == nil {
		return nil
	}
	m := *h.attestation.Measurement
	m.HostChecked = append([]string(nil), m.HostChecked...)
	a := &enclave.Attestation{Level: h.attestation.Level, Measurement: &m}
	if r := h.attestation.Remote; r != nil {
		c := *r
		c.Document = append([]byte(nil), r.Document...)
		c.Nonce = append([]byte(nil), r.Nonce...)
		c.ClientPublicKey = append([]byte(nil), r.ClientPublicKey...)
		c.EnclavePublicKey = append([]byte(nil), r.EnclavePublicKey...)
		c.PinnedPCRs = maps.Clone(r.PinnedPCRs)
		a.Remote = &c
	}
	return a
}

// Lost returns how many workers this session lost as guard_unavailable.
func (h *Host) Lost() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

// Err returns an error wrapping ErrWorkerLost once the worker has been lost
// MaxWorkerLosses times: the session must then abort (circuit_breaker,
// reason guard_unavailable). It is nil before that.
func (h *Host) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.enclaveErr != nil {
		return h.enclaveErr
	}
	if h.lost >= MaxWorkerLosses {
		return fmt.Errorf("guard: the guard worker was lost %d times this session: %w", h.lost, ErrWorkerLost)
	}
	return nil
}

// Close stops the worker: it closes the worker's stdin, waits for it to
// exit until ctx ends, then kills it. Later Reviews deny.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.w == nil {
		return nil
	}
	w := h.w
	h.w = nil
	return w.shutdown(ctx)
}

// Review implements check.Guard. It never returns an allow unless the
// worker's authenticated answer for this very request is ALLOW.
func (h *Host) Review(ctx context.Context, req check.GuardRequest) verdict.Verdict {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return deny(verdict.GuardUnavailable, "guard host is closed")
	case h.enclaveErr != nil:
		return deny(verdict.GuardUnavailable, h.enclaveErr.Error())
	case h.lost >= MaxWorkerLosses:
		return deny(verdict.GuardUnavailable, fmt.Sprintf("guard worker lost %d times this session; not restarted", h.lost))
	case req.Intent == nil:
		return deny(verdict.GuardProtocolError, "no intent to review")
	}
	if h.w == nil {
		if err := h.startLocked(ctx); err != nil {
			return deny(verdict.GuardUnavailable, err.Error())
		}
	}
	return h.exchangeLocked(ctx, req)
}

// deny builds a guard denial.
func deny(code verdict.Code, msg string) verdict.Verdict {
	return verdict.Denial(verdict.CheckGuard, code, msg)
}

// startLocked spawns a worker with a new key. A failure counts as a loss.
// h.mu must be held.
func (h *Host) startLocked(ctx context.Context) error {
	w, err := h.spawn(ctx)
	if err != nil {
		h.lost++
		// Fail closed: in the software enclave a worker that could not be
		// started and checked is not replaced by a plain one, nor retried
		// (unless only the caller's context ended): the session aborts.
		if h.opt.Enclave != enclave.LevelNone && ctx.Err() == nil {
			if !errors.Is(err, ErrEnclave) {
				err = fmt.Errorf("%w: %w", ErrEnclave, err)
			}
			h.enclaveErr = err
		}
		h.log.Warn("guard worker failed to start", "error", err.Error(), "losses", h.lost)
		return err
	}
	if w.measurement != nil && h.attestation == nil {
		h.attestation = &enclave.Attestation{Level: h.opt.Enclave, Measurement: w.measurement, Remote: w.remote}
	}
	h.w = w
	return nil
}

// failLocked records a failure that ends the worker: it is killed, and the
// next request starts a new one with a new key. h.mu must be held.
func (h *Host) failLocked(code verdict.Code, msg string) verdict.Verdict {
	detail := ""
	if h.w != nil {
		detail = h.w.kill()
		h.w = nil
	}
	if detail != "" {
		msg += " (" + detail + ")"
	}
	if code == verdict.GuardUnavailable {
		h.lost++
	}
	h.log.Warn("guard worker dropped", "code", string(code), "detail", msg, "losses", h.lost)
	return deny(code, msg)
}

// exchangeLocked sends one request and maps the answer. h.mu must be held
// and h.w set.
func (h *Host) exchangeLocked(ctx context.Context, req check.GuardRequest) verdict.Verdict {
	w := h.w
	intentJSON, err := json.Marshal(req.Intent)
	if err != nil {
		return deny(verdict.GuardProtocolError, "encode intent: "+err.Error())
	}
	flags := req.Flags
	if flags == nil {
		flags = []string{}
	}
	w.nonce++
	payload, err := json.Marshal(struct {
		Nonce     uint64          `json:"nonce"`
		TsMs      int64           `json:"ts_ms"`
		SessionID string          `json:"session_id"`
		Step      int             `json:"step"`
		Goal      string          `json:"goal"`
		Intent    json.RawMessage `json:"intent"`
		Flags     []string        `json:"flags"`
	}{w.nonce, h.now().UnixMilli(), req.SessionID, req.Step, req.Goal, intentJSON, flags})
	if err != nil {
		return deny(verdict.GuardProtocolError, "encode request: "+err.Error())
	}
	line := seal(w.key, RequestLabel, payload)
	if len(line)-1 > MaxLineBytes {
		// Never sent, so the worker is still in sync; the skipped nonce
		// keeps the sequence strictly increasing.
		return deny(verdict.GuardProtocolError, fmt.Sprintf("request is %d bytes, over the %d-byte line limit", len(line)-1, MaxLineBytes))
	}

	deadline := h.now().Add(h.opt.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// Cancelling ctx unblocks the pipe I/O at once. If the callback has
	// started, wait for it, so it cannot move a later request's deadline.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = w.stdin.SetWriteDeadline(time.Now())
		_ = w.stdout.SetReadDeadline(time.Now())
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	if err := w.stdin.SetWriteDeadline(deadline); err != nil {
		return h.failLocked(verdict.GuardUnavailable, "guard worker pipe: "+err.Error())
	}
	if _, err := w.stdin.Write(line); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return h.failLocked(verdict.GuardTimeout, h.timeoutMessage(ctx))
		}
		return h.failLocked(verdict.GuardUnavailable, "guard worker is gone: "+err.Error())
	}
	if err := w.stdout.SetReadDeadline(deadline); err != nil {
		return h.failLocked(verdict.GuardUnavailable, "guard worker pipe: "+err.Error())
	}
	respLine, err := readLine(w.out, MaxLineBytes)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return h.failLocked(verdict.GuardTimeout, h.timeoutMessage(ctx))
	case errors.Is(err, ErrLineTooLong):
		return h.failLocked(verdict.GuardProtocolError, "guard response exceeds 1 MiB")
	case err != nil:
		return h.failLocked(verdict.GuardUnavailable, "guard worker closed its output: "+err.Error())
	}
	// An answer that arrives after the deadline is a timeout, whatever it
	// says: the step was already due.
	if h.now().After(deadline) {
		return h.failLocked(verdict.GuardTimeout, h.timeoutMessage(ctx))
	}
	// The MAC check comes first; nothing of the answer is decoded before.
	raw, err := open(w.key, ResponseLabel, respLine)
	if err != nil {
		return h.failLocked(verdict.GuardProtocolError, "guard response rejected: "+err.Error())
	}
	resp, err := decodeResponse(raw)
	if err != nil {
		return h.failLocked(verdict.GuardProtocolError, "guard response rejected: "+err.Error())
	}
	// The nonce binds the answer to this request: an authentic answer to an
	// earlier request, replayed, must not decide this one.
	if resp.Nonce != w.nonce {
		return h.failLocked(verdict.GuardProtocolError, fmt.Sprintf("guard response nonce %d does not match request nonce %d (worker error %q)", resp.Nonce, w.nonce, resp.Error))
	}
	return h.mapResponse(resp)
}

func (h *Host) timeoutMessage(ctx context.Context) string {
	if ctx.Err() != nil {
		return "guard review cancelled: " + ctx.Err().Error()
	}
	return fmt.Sprintf("guard did not answer within %s", h.opt.Timeout)
}

// mapResponse turns an authenticated, well-formed response for the current
// nonce into a verdict. h.mu must be held.
func (h *Host) mapResponse(resp Response) verdict.Verdict {
	switch {
	case resp.Error == "" && resp.Verdict == VerdictAllow:
		return verdict.New(verdict.CheckGuard, verdict.Allow, verdict.GuardAllow, resp.Reason)
	case resp.Error == "" && resp.Verdict == VerdictDeny:
		return deny(verdict.GuardDeny, resp.Reason)
	case resp.Verdict == VerdictAllow:
		// An error with an allow is incoherent: never trust it as an allow.
		return h.failLocked(verdict.GuardProtocolError, fmt.Sprintf("guard answered ALLOW with error %q", resp.Error))
	case resp.Error == ErrCodeUnparseable:
		return deny(verdict.GuardUnparseable, "unparseable guard reply: "+quoteReason(resp.Reason))
	case resp.Error == ErrCodeBackend:
		return deny(verdict.GuardBackendError, resp.Reason)
	case resp.Error == ErrCodeBadMAC, resp.Error == ErrCodeReplayedNonce, resp.Error == ErrCodeStaleRequest, resp.Error == ErrCodeBadRequest:
		return h.failLocked(verdict.GuardProtocolError, "guard worker refused the request: "+resp.Error+": "+resp.Reason)
	default:
		return h.failLocked(verdict.GuardProtocolError, fmt.Sprintf("guard worker answered unknown error %q", resp.Error))
	}
}

func quoteReason(s string) string {
	if s == "" {
		return "(empty)"
	}
	return fmt.Sprintf("%q", s)
}

// workerProc is one running worker.
type workerProc struct {
	cmd    *exec.Cmd
	key    []byte
	stdin  *os.File // write end of the worker's stdin
	stdout *os.File // read end of the worker's stdout
	stderr *os.File // read end of the worker's stderr, owned by copyStderr
	out    *bufio.Reader
	// nonce is the last nonce sent to this worker.
	nonce uint64
	// stderrDone is closed when the stderr copier has returned.
	stderrDone chan struct{}
	// stderrTail keeps the worker's last stderr lines, to explain a
	// worker that failed before it could speak the protocol.
	stderrTail *lineTail
	// measurement is the software-enclave worker's checked measurement.
	measurement *enclave.Measurement
	// remote is the verified attestation of the remote enclave whose
	// channel this worker holds (LevelRemote only).
	remote *enclave.Remote
}

// spawn starts a worker process with a new key and, in the software
// enclave, checks it before returning it.
func (h *Host) spawn(ctx context.Context) (w *workerProc, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("guard: start worker: %w", err)
	}
	// Both enclave levels run a hardened worker.
	soft := h.opt.Enclave != enclave.LevelNone
	wantSHA := ""
	if soft {
		// Hashed before the exec: the worker's own hash of the file it runs
		// must match, which catches a swap in between.
		p := h.hashPath
		if p == "" {
			p = h.opt.Executable
		}
		if wantSHA, err = software.FileSHA256(p); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEnclave, err)
		}
	}
	key := make([]byte, KeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("guard: worker key: %w", err)
	}
	var remoteRec *enclave.Remote
	// Parent and child ends of the pipes; whatever is still open on
	// failure is closed.
	var files []*os.File
	defer func() {
		if err != nil {
			for _, f := range files {
				_ = f.Close()
			}
		}
	}()
	pipe := func() (r, wr *os.File, err error) {
		r, wr, err = os.Pipe()
		if err == nil {
			files = append(files, r, wr)
		}
		return r, wr, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("guard: worker pipe: %w", err)
	}
	outR, outW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("guard: worker pipe: %w", err)
	}
	errR, errW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("guard: worker pipe: %w", err)
	}
	cmd := exec.Command(h.opt.Executable, h.opt.Args...)
	// The worker's environment is exactly what the host hands it
	// (docs/design/checks.md#guard-protocol), never the host's own: no stray
	// secrets, no LD_PRELOAD.
	cmd.Env = append([]string(nil), h.opt.Env...)
	if soft {
		// Security: in the software enclave the key never enters the
		// environment, whose initial copy stays readable in
		// /proc/<pid>/environ for the worker's life; it goes through a
		// pipe that only the worker holds, written and closed before the
		// worker runs (the document is far below the pipe's capacity).
		secR, secW, err := pipe()
		if err != nil {
			return nil, fmt.Errorf("guard: secrets pipe: %w", err)
		}
		var channel []byte
		if h.opt.Enclave == enclave.LevelRemote {
			// Security: a fresh attestation for every worker: its nonce
			// makes a replayed document fail, and the channel's keys
			// exist only for this worker. A failure is never a fallback
			// to a plain model call.
			// Bounded like a request: an enclave that does not answer
			// must not hold the session's start forever.
			actx, cancel := context.WithTimeout(ctx, h.opt.Timeout)
			ch, rec, err := remote.Attest(actx, *h.opt.Remote)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("%w: attest the remote guard enclave: %w", ErrEnclave, err)
			}
			channel, err = ch.Export()
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrEnclave, err)
			}
			defer clear(channel)
			remoteRec = rec
		}
		doc := encodeSecrets(key, h.opt.Enclave, channel)
		_, err = secW.Write(doc)
		clear(doc)
		if err != nil {
			return nil, fmt.Errorf("guard: write secrets pipe: %w", err)
		}
		if err := secW.Close(); err != nil {
			return nil, fmt.Errorf("guard: close secrets pipe: %w", err)
		}
		cmd.ExtraFiles = []*os.File{secR}
		cmd.Env = append(cmd.Env, SecretsFDEnv+"="+strconv.Itoa(SecretsFD))
	} else {
		cmd.Env = append(cmd.Env, KeyEnv+"="+hex.EncodeToString(key))
	}
	// "/" so that a .env file in the host's working directory cannot
	// reconfigure the worker.
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = workerSysProcAttr()
	if h.prepare != nil {
		h.prepare(cmd)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("guard: start worker %s: %w", h.opt.Executable, err)
	}
	// The child holds its ends now; closing ours makes EOF mean "the worker
	// is gone".
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()
	for _, f := range cmd.ExtraFiles {
		_ = f.Close()
	}
	w = &workerProc{cmd: cmd, key: key, stdin: inW, stdout: outR, stderr: errR, out: bufio.NewReaderSize(outR, 64<<10),
		stderrDone: make(chan struct{}), stderrTail: &lineTail{}}
	go h.copyStderr(errR, w.stderrDone, w.stderrTail, cmd.Process.Pid)
	h.log.Debug("guard worker started", "pid", cmd.Process.Pid, "enclave", string(h.opt.Enclave))
	if soft {
		m, err := h.attest(ctx, w, wantSHA)
		if err != nil {
			detail := w.kill()
			if tail := w.stderrTail.String(); tail != "" {
				detail = strings.TrimSpace(detail + "; worker said: " + tail)
			}
			if detail != "" {
				err = fmt.Errorf("%w (%s)", err, detail)
			}
			return nil, err
		}
		w.measurement = m
		w.remote = remoteRec
		h.log.Info("guard worker enclave checked", "pid", cmd.Process.Pid, "enclave", string(h.opt.Enclave),
			"worker_sha256", m.WorkerSHA256, "landlock_abi", m.LandlockABI, "seccomp_sha256", m.SeccompSHA256,
			"host_checked", strings.Join(m.HostChecked, ", "))
	}
	return w, nil
}

// attest reads a software-enclave worker's hello within the request
// timeout and checks it, then checks the worker's /proc entries. Any
// failure is ErrEnclave.
func (h *Host) attest(ctx context.Context, w *workerProc, wantSHA string) (*enclave.Measurement, error) {
	deadline := time.Now().Add(h.opt.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = w.stdout.SetReadDeadline(time.Now())
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	if err := w.stdout.SetReadDeadline(deadline); err != nil {
		return nil, fmt.Errorf("%w: guard worker pipe: %w", ErrEnclave, err)
	}
	line, err := readLine(w.out, MaxLineBytes)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		return nil, fmt.Errorf("guard: worker hello: %w", ctx.Err())
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, fmt.Errorf("%w: no hello from the guard worker within %s", ErrEnclave, h.opt.Timeout)
	case err != nil:
		return nil, fmt.Errorf("%w: the guard worker ended before its hello: %w", ErrEnclave, err)
	}
	m, err := openHello(w.key, line)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEnclave, err)
	}
	checked, err := checkMeasurement(m, wantSHA)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEnclave, err)
	}
	// Security: what the worker says of itself is checked against the
	// kernel's view of the process, so a worker that lies in its hello
	// (or a binary that sends a canned one) is refused.
	outside, err := checkWorkerProcess(w.cmd.Process.Pid)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEnclave, err)
	}
	m.HostChecked = append(checked, outside...)
	return &m, nil
}

// copyStderr copies the worker's stderr lines into the log until the pipe
// ends, within the session's StderrCapBytes; the rest is read and dropped
// so the worker never blocks on a full pipe.
func (h *Host) copyStderr(r *os.File, done chan<- struct{}, tail *lineTail, pid int) {
	defer close(done)
	defer r.Close()
	br := bufio.NewReader(r)
	warned := false
	for {
		line, err := readLine(br, 4<<10)
		if len(line) > 0 || errors.Is(err, ErrLineTooLong) {
			n := int64(len(line))
			if errors.Is(err, ErrLineTooLong) {
				line, n = []byte("(overlong line dropped)"), 4<<10
			}
			tail.add(string(line))
			if h.stderrLeft.Add(-n) >= 0 {
				h.log.Info("guard worker", "pid", pid, "stderr", string(line))
			} else if !warned {
				warned = true
				h.log.Warn("guard worker stderr over the per-session cap; dropping the rest", "pid", pid, "cap_bytes", StderrCapBytes)
			}
		}
		if err != nil && !errors.Is(err, ErrLineTooLong) {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, os.ErrClosed) {
				h.log.Warn("guard worker stderr", "pid", pid, "error", err.Error())
			}
			return
		}
	}
}

// kill ends the worker at once and reaps it. It returns the exit status
// when the worker had already exited by itself, for the denial message.
func (w *workerProc) kill() string {
	status := ""
	// Killing a worker that already exited (a zombie until Wait) is
	// harmless; Wait then reports its own exit status.
	_ = w.cmd.Process.Kill()
	err := w.cmd.Wait()
	if st := w.cmd.ProcessState; st != nil && st.Exited() {
		status = "worker " + st.String()
	} else if err != nil && !isKilled(err) {
		status = "worker " + err.Error()
	}
	_ = w.stdin.Close()
	_ = w.stdout.Close()
	w.waitStderr()
	return status
}

// stderrGrace is how long the stderr copier may take to drain after the
// worker is gone; a descendant still holding the pipe does not get to stall
// the host.
const stderrGrace = 2 * time.Second

// waitStderr waits for the stderr copier, closing its pipe after
// stderrGrace to unblock it.
func (w *workerProc) waitStderr() {
	t := time.NewTimer(stderrGrace)
	defer t.Stop()
	select {
	case <-w.stderrDone:
	case <-t.C:
		_ = w.stderr.Close()
		<-w.stderrDone
	}
}

// isKilled reports whether a Wait error only says the process died by a
// signal (our kill).
func isKilled(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && !ee.Exited()
}

// shutdown closes the worker's stdin and waits for it to exit until ctx
// ends; then it kills it.
func (w *workerProc) shutdown(ctx context.Context) error {
	_ = w.stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- w.cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-ctx.Done():
		_ = w.cmd.Process.Kill()
		err = <-exited
	}
	_ = w.stdout.Close()
	w.waitStderr()
	if err != nil && !isKilled(err) {
		return fmt.Errorf("guard: worker exit: %w", err)
	}
	return nil
}

// lineTail keeps the last few lines a worker wrote to stderr.
type lineTail struct {
	mu    sync.Mutex
	lines []string // guarded by mu
}

// tailLines is how many stderr lines a start failure quotes.
const tailLines = 3

func (t *lineTail) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, s)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

// String returns the kept lines, joined.
func (t *lineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}
