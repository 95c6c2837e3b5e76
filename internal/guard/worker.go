package guard

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/verdict"
)

// WorkerOptions configure Serve.
type WorkerOptions struct {
	// Key is the HMAC key (KeyBytes bytes) shared with the host.
	Key []byte
	// Client is the guard model.
	Client llm.Client
	// LLMTimeout bounds each model call; see LLMTimeout.
	LLMTimeout time.Duration
	// Logger receives one line per failure; nil discards.
	Logger *slog.Logger
	// Hello, when set, is sent first, sealed under HelloLabel, before any
	// request is read: the software enclave's measurement.
	Hello *enclave.Measurement
	// Now and Rand replace the clock and the marker-tag source in tests.
	Now  func() time.Time
	Rand io.Reader
}

// Serve runs the worker side of the protocol: it answers each request line
// on in with one response line on out until in ends (nil) or fails. A
// request that fails authentication or validation is answered DENY with an
// error value; only I/O failures end the loop. The bytes of each request
// line and each response Serve owns are zeroed once the exchange is done
// (see the package's Limitations for the copies it does not own).
func Serve(ctx context.Context, in io.Reader, out io.Writer, opt WorkerOptions) error {
	if len(opt.Key) != KeyBytes {
		return fmt.Errorf("guard worker: key is %d bytes, want %d", len(opt.Key), KeyBytes)
	}
	if opt.Client == nil {
		return errors.New("guard worker: no LLM client")
	}
	w := &worker{opt: opt, log: opt.Logger, now: opt.Now, rnd: opt.Rand}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.now == nil {
		w.now = time.Now
	}
	if w.rnd == nil {
		w.rnd = rand.Reader
	}
	if w.opt.LLMTimeout <= 0 {
		w.opt.LLMTimeout = LLMTimeout(DefaultTimeout)
	}
	if opt.Hello != nil {
		line, err := sealHello(opt.Key, *opt.Hello)
		if err != nil {
			return err
		}
		_, err = out.Write(line)
		if err != nil {
			return fmt.Errorf("guard worker: write hello: %w", err)
		}
	}
	br := &lineBuffer{rd: in, buf: make([]byte, 64<<10)}
	for {
		line, err := readLine(br, MaxLineBytes)
		var resp Response
		switch {
		case err == nil:
			resp = w.handle(ctx, line)
			clear(line)
			br.wipe()
		case errors.Is(err, ErrLineTooLong):
			resp = w.reject(0, ErrCodeBadRequest, "request line exceeds 1 MiB")
		case errors.Is(err, io.EOF):
			return nil
		default:
			return fmt.Errorf("guard worker: read request: %w", err)
		}
		if err := w.send(out, resp); err != nil {
			return err
		}
	}
}

// worker is the state of one Serve loop.
type worker struct {
	opt WorkerOptions
	log *slog.Logger
	now func() time.Time
	rnd io.Reader
	// lastNonce is the last accepted nonce; the host's first is 1.
	lastNonce uint64
}

func (w *worker) send(out io.Writer, resp Response) error {
	payload, err := json.Marshal(resp)
	if err != nil {
		return fmt.Errorf("guard worker: encode response: %w", err)
	}
	line := seal(w.opt.Key, ResponseLabel, payload)
	clear(payload)
	_, err = out.Write(line)
	clear(line)
	if err != nil {
		return fmt.Errorf("guard worker: write response: %w", err)
	}
	return nil
}

func (w *worker) reject(nonce uint64, code, reason string) Response {
	w.log.Warn("guard request rejected", "error", code, "reason", reason)
	return Response{Nonce: nonce, Verdict: VerdictDeny, Reason: truncateRunes(reason, MaxReasonRunes), Error: code}
}

func (w *worker) handle(ctx context.Context, line []byte) Response {
	payload, err := open(w.opt.Key, RequestLabel, line)
	if errors.Is(err, ErrBadMAC) {
		return w.reject(0, ErrCodeBadMAC, "request MAC does not verify")
	}
	if err != nil {
		return w.reject(0, ErrCodeBadRequest, err.Error())
	}
	// Only now, with the bytes authenticated, is the payload decoded.
	req, err := decodeRequest(payload)
	clear(payload)
	if err != nil {
		return w.reject(0, ErrCodeBadRequest, err.Error())
	}
	// A replayed request (same or older nonce) must not get a fresh
	// verdict that a man in the middle could substitute for a newer one.
	if req.Nonce <= w.lastNonce {
		return w.reject(req.Nonce, ErrCodeReplayedNonce, fmt.Sprintf("nonce %d is not above the last accepted %d", req.Nonce, w.lastNonce))
	}
	// A request held back and delivered late is refused even with a fresh
	// nonce.
	if skew := w.now().Sub(time.UnixMilli(req.TsMs)); skew > MaxClockSkew || skew < -MaxClockSkew {
		return w.reject(req.Nonce, ErrCodeStaleRequest, fmt.Sprintf("request timestamp is %s from the worker clock (max %s)", skew.Round(time.Millisecond), MaxClockSkew))
	}
	w.lastNonce = req.Nonce
	return w.review(ctx, req)
}

// review asks the model and maps its reply.
func (w *worker) review(ctx context.Context, req Request) Response {
	resp := Response{Nonce: req.Nonce, Verdict: VerdictDeny, Model: w.opt.Client.Model()}
	prompt, err := BuildPrompt(req, w.rnd)
	if err != nil {
		resp.Reason, resp.Error = truncateRunes(err.Error(), MaxReasonRunes), ErrCodeBackend
		return resp
	}
	cctx, cancel := context.WithTimeout(ctx, w.opt.LLMTimeout)
	defer cancel()
	start := time.Now()
	out, err := w.opt.Client.Complete(cctx, llm.Request{
		Kind:        llm.KindGuard,
		System:      SystemPrompt,
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: prompt}},
		Temperature: 0,
		MaxTokens:   MaxOutputTokens,
	})
	resp.LatencyMs = time.Since(start).Milliseconds()
	if err != nil {
		// llm errors carry no API key (internal/llm redacts them).
		w.log.Warn("guard LLM call failed", "step", req.Step, "error", err.Error())
		resp.Reason, resp.Error = truncateRunes("guard LLM call failed: "+err.Error(), MaxReasonRunes), ErrCodeBackend
		return resp
	}
	if out.Model != "" {
		resp.Model = out.Model
	}
	r := ParseReply(out.Text)
	resp.Raw, resp.Reason = r.Raw, r.Reason
	switch r.Code {
	case verdict.GuardAllow:
		resp.Verdict = VerdictAllow
	case verdict.GuardDeny:
	default:
		resp.Error = ErrCodeUnparseable
	}
	return resp
}

// lineBuffer is the worker's read buffer for requests: a minimal
// bufio.Reader (ReadSlice only) that owns its memory, so the bytes of a
// served request can be zeroed rather than linger until overwritten.
type lineBuffer struct {
	rd   io.Reader
	buf  []byte
	r, w int   // buf[r:w] is read but not yet returned
	err  error // the reader's error, returned once buf[r:w] is used up
}

// ReadSlice implements sliceReader with bufio.Reader.ReadSlice's
// contract: the slice is valid until the next call.
func (b *lineBuffer) ReadSlice(delim byte) ([]byte, error) {
	empty := 0
	for {
		if i := bytes.IndexByte(b.buf[b.r:b.w], delim); i >= 0 {
			line := b.buf[b.r : b.r+i+1]
			b.r += i + 1
			return line, nil
		}
		if b.err != nil {
			line, err := b.buf[b.r:b.w], b.err
			b.r, b.err = b.w, nil
			return line, err
		}
		if b.r == 0 && b.w == len(b.buf) {
			b.r = b.w
			return b.buf, bufio.ErrBufferFull
		}
		if b.r > 0 {
			// Move the unread bytes to the front and zero what they left.
			n := copy(b.buf, b.buf[b.r:b.w])
			clear(b.buf[n:b.w])
			b.r, b.w = 0, n
		}
		n, err := b.rd.Read(b.buf[b.w:])
		b.w += n
		b.err = err
		if n == 0 && err == nil {
			if empty++; empty == 100 {
				b.err = io.ErrNoProgress
			}
		}
	}
}

// wipe zeroes the bytes already returned.
func (b *lineBuffer) wipe() {
	clear(b.buf[:b.r])
	if b.r == b.w {
		b.r, b.w = 0, 0
	}
}
