package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// streamPage is how many events one replay read returns.
const streamPage = 500

// handleStream is route 15: every event, or one session's with session_id.
func (s *Server) handleStream(rc *reqCtx) {
	var session uuid.UUID
	if v, ok := queryFirst(rc.r, "session_id"); ok {
		id, err := parseUUID(v)
		if err != nil {
			rc.fail(errf(http.StatusBadRequest, "session_id: %v", err))
			return
		}
		session = id
	}
	cursor, err := streamCursor(rc.r)
	if err != nil {
		rc.fail(err)
		return
	}
	if session != uuid.Nil {
		if _, err := s.sessionByID(rc, session); err != nil {
			rc.fail(err)
			return
		}
	}
	s.stream(rc, session, cursor)
}

// handleSessionStream is route 16: route 15 with the session fixed.
func (s *Server) handleSessionStream(rc *reqCtx) {
	id, err := rc.sessionParam()
	if err != nil {
		rc.fail(err)
		return
	}
	cursor, err := streamCursor(rc.r)
	if err != nil {
		rc.fail(err)
		return
	}
	if _, err := s.sessionByID(rc, id); err != nil {
		rc.fail(err)
		return
	}
	s.stream(rc, id, cursor)
}

// streamCursor is since, else after, else Last-Event-ID, else 0; negative
// values count as 0 (docs/design/api.md#sse).
func streamCursor(r *http.Request) (int64, error) {
	for _, name := range []string{"since", "after"} {
		if v, ok := queryFirst(r, name); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, errf(http.StatusBadRequest, "%s: %q is not an integer event id", name, v)
			}
			return max(n, 0), nil
		}
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, errf(http.StatusBadRequest, "Last-Event-ID: %q is not an integer event id", v)
		}
		return max(n, 0), nil
	}
	return 0, nil
}

// stream serves one SSE connection: it replays every matching event with an
// id above the cursor, then follows the feed. The cursor is an event id, so
// events with log index >= cursor are due.
func (s *Server) stream(rc *reqCtx, session uuid.UUID, cursor int64) {
	h := rc.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	rc.w.WriteHeader(http.StatusOK)
	rc.status = http.StatusOK
	if rc.r.Method == http.MethodHead {
		return
	}
	ctrl := http.NewResponseController(rc.w)
	if err := ctrl.Flush(); err != nil {
		return
	}
	s.metrics.sseClients.Inc()
	s.streams.Add(1)
	defer s.metrics.sseClients.Dec()
	defer s.streams.Add(-1)

	st := &streamState{s: s, rc: rc, ctrl: ctrl, session: session, cursor: cursor,
		keep: time.Duration(s.cfg.Server.SSEKeepAliveSecs) * time.Second, owns: map[uuid.UUID]bool{}}
	st.timer = time.NewTimer(st.keep)
	defer st.timer.Stop()
	reset := s.resetChan()
	ctx := rc.r.Context()
	for {
		wait := s.feed.news.wait()
		caughtUp, err := st.catchUp(ctx)
		if err != nil {
			st.end(err)
			return
		}
		if !caughtUp {
			continue
		}
		select {
		case <-wait:
		case <-st.timer.C:
			// Re-check the token at each keep-alive tick: a deleted or
			// expired token ends the stream (docs/design/api.md#sse).
			if _, err := s.lookupToken(ctx, rc.who.hash); err != nil {
				return
			}
			if err := st.write([]byte(": keep-alive\n\n")); err != nil {
				st.end(err)
				return
			}
		case <-ctx.Done():
			return
		case <-s.streamsDone:
			return
		case <-reset:
			return
		}
	}
}

// streamState is one stream's position.
type streamState struct {
	s       *Server
	rc      *reqCtx
	ctrl    *http.ResponseController
	session uuid.UUID
	cursor  int64  // next log index due
	seqNext uint64 // replay position in the session's chain (session streams)
	live    bool   // caught up with the feed at least once
	keep    time.Duration
	timer   *time.Timer
	buf     []byte
	// owns caches, for a token of scope own_sessions, which sessions'
	// events this stream may carry (scope.go).
	owns map[uuid.UUID]bool
}

// visible reports whether the stream may carry an event of session id.
func (st *streamState) visible(id uuid.UUID) bool {
	return st.s.ownsSession(st.rc, id, st.owns)
}

// errDropped ends a stream whose client fell behind the feed.
var errDropped = errors.New("stream dropped: the client fell behind")

// catchUp writes what is due. It reports true when the stream is level with
// the feed.
func (st *streamState) catchUp(ctx context.Context) (bool, error) {
	frames, next, behind := st.s.feed.since(st.cursor, 256)
	if behind {
		if st.live {
			// Fell out of the ring while following live events: drop
			// the client rather than let it hold back anything.
			return false, errDropped
		}
		return false, st.replay(ctx)
	}
	if len(frames) == 0 {
		st.live = true
		return true, nil
	}
	st.buf = st.buf[:0]
	for _, f := range frames {
		if st.session == uuid.Nil && st.visible(f.session) || st.session != uuid.Nil && f.session == st.session {
			st.buf = append(st.buf, f.bytes()...)
		}
	}
	st.cursor = next
	if len(st.buf) == 0 {
		return false, nil
	}
	return false, st.write(st.buf)
}

// replay pages events older than the ring from the database, in order and
// without pauses.
func (st *streamState) replay(ctx context.Context) error {
	l := st.s.ledger()
	if st.session == uuid.Nil {
		evs, err := l.EventsByLog(ctx, st.cursor, streamPage)
		if err != nil {
			return &storageError{err}
		}
		if len(evs) == 0 {
			return &storageError{errors.New("the event log ended below its known size")}
		}
		st.buf = st.buf[:0]
		for i := range evs {
			if evs[i].LogIndex != st.cursor {
				break
			}
			if st.visible(evs[i].SessionID) {
				st.buf = append(st.buf, renderSSE(&evs[i])...)
			}
			st.cursor++
		}
		return st.write(st.buf)
	}
	head := st.s.feed.head()
	evs, err := l.Events(ctx, st.session, st.seqNext, streamPage)
	if err != nil {
		return &storageError{err}
	}
	st.buf = st.buf[:0]
	for i := range evs {
		st.seqNext = evs[i].Seq + 1
		if evs[i].LogIndex >= st.cursor {
			st.buf = append(st.buf, renderSSE(&evs[i])...)
			st.cursor = evs[i].LogIndex + 1
		}
	}
	if len(evs) < streamPage {
		// Every event of the session below head was visible to this read,
		// so the ring can take over from head.
		st.cursor = max(st.cursor, head)
	}
	if len(st.buf) == 0 {
		return nil
	}
	return st.write(st.buf)
}

// write writes and flushes; every written frame restarts the keep-alive
// timer, so a keep-alive follows only SSE_KEEPALIVE_SECS of silence.
func (st *streamState) write(b []byte) error {
	// A client that does not read for this long is dropped (and counted)
	// instead of holding a goroutine.
	st.ctrl.SetWriteDeadline(time.Now().Add(st.s.opts.StreamWriteTimeout))
	if _, err := st.rc.w.Write(b); err != nil {
		return err
	}
	if err := st.ctrl.Flush(); err != nil {
		return err
	}
	if !st.timer.Stop() {
		select {
		case <-st.timer.C:
		default:
		}
	}
	st.timer.Reset(st.keep)
	return nil
}

// storageError marks a failure to read the ledger (as opposed to a failure
// to write to the client).
type storageError struct{ err error }

func (e *storageError) Error() string { return e.err.Error() }
func (e *storageError) Unwrap() error { return e.err }

// end finishes a stream after an error: a storage error is told to the
// client; a client that fell behind or stopped reading is counted as
// dropped; a client that went away needs nothing.
func (st *streamState) end(err error) {
	var se *storageError
	switch {
	case errors.As(err, &se):
		st.s.log.Warn("event stream ended by a storage error", "request_id", st.rc.id, "err", err)
		msg, _ := json.Marshal(map[string]string{"error": "reading the ledger failed (request " + st.rc.id + "); reconnect with Last-Event-ID"})
		st.rc.w.Write(append(append([]byte("event: error\ndata: "), msg...), "\n\n"...))
		st.ctrl.Flush()
	case errors.Is(err, errDropped), errors.Is(err, os.ErrDeadlineExceeded):
		st.s.metrics.sseDropped.Inc()
	}
}
