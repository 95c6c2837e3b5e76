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
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ironvise/ironvise/internal/check"
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
	// the Host adds per worker. WorkerEnv builds it.
	Env []string
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

	// mu serialises requests: one in flight per session.
	mu     sync.Mutex
	w      *workerProc // guarded by mu; nil when no worker runs
	lost   int         // guarded by mu; guard_unavailable losses
	closed bool        // guarded by mu
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
// setup shows at session start. A failure counts as a lost worker.
func (h *Host) Start(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	if h.w != nil {
		return nil
	}
	return h.startLocked(ctx)
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
		h.log.Warn("guard worker failed to start", "error", err.Error(), "losses", h.lost)
		return err
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
}

// spawn starts a worker process with a new key.
func (h *Host) spawn(ctx context.Context) (w *workerProc, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("guard: start worker: %w", err)
	}
	key := make([]byte, KeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("guard: worker key: %w", err)
	}
	// Parent and child ends of the three pipes; whatever is still open on
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
	cmd.Env = append(append([]string(nil), h.opt.Env...), KeyEnv+"="+hex.EncodeToString(key))
	// "/" so that a .env file in the host's working directory cannot
	// reconfigure the worker.
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = workerSysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("guard: start worker %s: %w", h.opt.Executable, err)
	}
	// The child holds its ends now; closing ours makes EOF mean "the worker
	// is gone".
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()
	w = &workerProc{cmd: cmd, key: key, stdin: inW, stdout: outR, stderr: errR, out: bufio.NewReaderSize(outR, 64<<10), stderrDone: make(chan struct{})}
	go h.copyStderr(errR, w.stderrDone, cmd.Process.Pid)
	h.log.Debug("guard worker started", "pid", cmd.Process.Pid)
	return w, nil
}

// copyStderr copies the worker's stderr lines into the log until the pipe
// ends, within the session's StderrCapBytes; the rest is read and dropped
// so the worker never blocks on a full pipe.
func (h *Host) copyStderr(r *os.File, done chan<- struct{}, pid int) {
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
