package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/redact"
)

// ringSize is how many rendered frames the feed keeps for live streams. A
// stream that falls further behind while live is dropped.
const ringSize = 8192

// feedPage is how many events one read of the log returns.
const feedPage = 512

// checkpointQuiet is how long after the last non-checkpoint event the feed
// writes a checkpoint, so one is written within 1 s after appends stop
// (docs/design/api.md#checkpoints) and an idle ledger stays silent.
const checkpointQuiet = 400 * time.Millisecond

// frame is one event of the ring, rendered once for every stream that
// carries it. Rendering (redaction above all) is most of the feed's work,
// and a server with no stream open never needs it, so a frame is rendered
// by the first stream that reads it.
type frame struct {
	index   int64 // log index (id − 1)
	session uuid.UUID
	typ     string

	once sync.Once
	ev   *ledger.Event // until rendered
	sse  []byte        // set by once
}

// newFrame holds e for rendering on first use.
func newFrame(e ledger.Event) *frame {
	return &frame{index: e.LogIndex, session: e.SessionID, typ: e.Type, ev: &e}
}

// bytes returns the complete SSE frame: "event: event\nid: …\ndata: …\n\n".
func (f *frame) bytes() []byte {
	f.once.Do(func() {
		f.sse = renderSSE(f.ev)
		f.ev = nil
	})
	return f.sse
}

// renderSSE renders an event's SSE frame with the payload as
// redact.Payload leaves it (docs/design/api.md: payloads on the stream are
// redacted; "redacted" says the payload no longer matches its hash).
func renderSSE(e *ledger.Event) []byte {
	payload, redacted := redact.Payload(e.Payload)
	b := make([]byte, 0, 400+len(payload))
	b = append(b, "event: event\nid: "...)
	b = strconv.AppendInt(b, e.ID(), 10)
	b = append(b, "\ndata: "...)
	b = appendEventJSON(b, e, payload, &redacted)
	b = append(b, "\n\n"...)
	return b
}

// SSEFrame returns the SSE frame of one event exactly as every stream
// receives it, so the redaction of the stream can be checked against that
// of webhook bodies from outside this package.
func SSEFrame(e *ledger.Event) []byte { return renderSSE(e) }

// broadcast wakes every waiter at once: wait returns a channel that the next
// signal closes.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{} // guarded by mu
}

func newBroadcast() *broadcast { return &broadcast{ch: make(chan struct{})} }

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcast) signal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.ch)
	b.ch = make(chan struct{})
}

// feed tails the Merkle log and keeps the newest frames in a ring. It is the
// only reader of new events; streams never slow it down.
type feed struct {
	s    *Server
	kick chan struct{}
	news *broadcast

	mu    sync.RWMutex
	next  int64    // guarded by mu: the log index read next
	ring  []*frame // guarded by mu: ring[i % ringSize]
	first int64    // guarded by mu: lowest index still in the ring
	start int64    // index the feed started at (events before it are history)
	err   error    // guarded by mu: the last read failure, nil once reads work
}

func newFeed(s *Server) *feed {
	f := &feed{s: s, kick: make(chan struct{}, 1), news: newBroadcast(), ring: make([]*frame, ringSize)}
	ctx, cancel := context.WithTimeout(s.bg, 10*time.Second)
	defer cancel()
	if n, err := s.ledger().LogSize(ctx); err == nil {
		f.next, f.first, f.start = n, n, n
	}
	return f
}

func (f *feed) startIndex() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.start
}

// poke wakes the feed (a local commit); it never blocks.
func (f *feed) poke() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// head returns the next index the feed will read.
func (f *feed) head() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.next
}

// reset restarts the feed on a new ledger (demo reset).
func (f *feed) reset(size int64) {
	f.mu.Lock()
	f.next, f.first, f.start = size, size, size
	clear(f.ring)
	f.mu.Unlock()
	f.news.signal()
}

func (f *feed) run() {
	t := time.NewTicker(f.s.opts.FeedPoll)
	defer t.Stop()
	cp := time.NewTimer(time.Hour)
	cp.Stop()
	defer cp.Stop()
	// Other instances' commits wake the feed at once where the database
	// says so (PostgreSQL LISTEN/NOTIFY); the poll stays as the fallback.
	// The listener is owned by the server's context.
	var notified <-chan struct{}
	if n, ok := f.s.ledger().Backend().(ledger.CommitNotifier); ok {
		if ch, err := n.CommitNotifications(f.s.bg); err == nil {
			notified = ch
		}
	}
	defer func() {
		// The listener ends with the server's context: wait for it, so
		// it has let go of its connection before the ledger closes.
		for notified != nil {
			if _, ok := <-notified; !ok {
				notified = nil
			}
		}
	}()
	for {
		select {
		case <-f.s.bg.Done():
			return
		case <-f.kick:
		case _, ok := <-notified:
			if !ok {
				notified = nil
			}
		case <-t.C:
		case <-cp.C:
			ctx, cancel := context.WithTimeout(f.s.bg, 10*time.Second)
			if _, err := f.s.ledger().Checkpoint(ctx); err != nil && f.s.bg.Err() == nil {
				f.s.log.Warn("checkpoint after appends failed", "err", err)
			}
			cancel()
			continue
		}
		if f.pull() {
			cp.Reset(checkpointQuiet)
		}
	}
}

// pull reads every new event and publishes it; it reports whether any of
// them was not a checkpoint (so a checkpoint is due).
func (f *feed) pull() bool {
	due := false
	for {
		f.mu.RLock()
		next := f.next
		f.mu.RUnlock()
		ctx, cancel := context.WithTimeout(f.s.bg, 10*time.Second)
		evs, err := f.s.ledger().EventsByLog(ctx, next, feedPage)
		cancel()
		if err != nil {
			if f.s.bg.Err() == nil {
				f.mu.Lock()
				f.err = err
				f.mu.Unlock()
				f.s.log.Warn("event feed: reading the log failed; retrying", "err", err)
			}
			return due
		}
		frames := make([]*frame, 0, len(evs))
		for i := range evs {
			// The log is gap-free; an index out of order means a commit
			// is not visible yet, so stop before it and read again.
			if evs[i].LogIndex != next+int64(len(frames)) {
				break
			}
			frames = append(frames, newFrame(evs[i]))
			f.s.observeEvent(&evs[i])
			if evs[i].Type != ledger.TypeCheckpoint {
				due = true
			}
		}
		if len(frames) > 0 {
			f.mu.Lock()
			for _, fr := range frames {
				f.ring[fr.index%ringSize] = fr
			}
			f.next = next + int64(len(frames))
			if f.next-f.first > ringSize {
				f.first = f.next - ringSize
			}
			f.err = nil
			f.mu.Unlock()
			f.news.signal()
		}
		if len(evs) < feedPage || len(frames) < len(evs) {
			return due
		}
	}
}

// since returns up to max frames with index >= from from the ring, and
// whether from is older than the ring holds (the reader must page from the
// database instead).
func (f *feed) since(from int64, max int) (frames []*frame, next int64, behind bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if from < f.first {
		return nil, from, true
	}
	if from >= f.next {
		return nil, from, false
	}
	end := min(f.next, from+int64(max))
	for i := from; i < end; i++ {
		frames = append(frames, f.ring[i%ringSize])
	}
	return frames, end, false
}

// observeEvent lets the parts of the server that follow every instance's
// events see one: the security window and local sessions sealed elsewhere.
func (s *Server) observeEvent(e *ledger.Event) {
	s.sec.observe(e)
	if e.Type == ledger.TypeSessionSealed && e.SessionID != uuid.Nil {
		s.runners.sealedElsewhere(e.SessionID)
	}
}
