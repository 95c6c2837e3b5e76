package server

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
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

	// offered are the batches of events this process committed, handed
	// over by the commit itself (Server.committed), in commit order, so
	// that the feed publishes them without reading back from the
	// database what it was just given: that read was most of the feed's
	// cost, about 0.8 ms of CPU per commit on the development host,
	// taken from the launcher and the reply of the command that
	// committed (docs/operate/performance.md). What was not handed over
	// (another process's commits, a gap, an overflow) is read as before.
	offerMu  sync.Mutex
	offered  [][]ledger.Event // guarded by offerMu
	offeredN int              // guarded by offerMu: events in offered
	overflow bool             // guarded by offerMu: some were dropped

	// readEvents counts the events read back from the log (for tests).
	readEvents atomic.Int64
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

// offer hands the feed the events of a commit of this process and wakes
// it. It is called on the commit's path, so it only queues: past feedPage
// events queued it drops them, and the feed reads them back instead.
func (f *feed) offer(evs []ledger.Event) {
	f.offerMu.Lock()
	if f.offeredN+len(evs) > feedPage {
		f.offered, f.offeredN, f.overflow = nil, 0, true
	} else {
		f.offered = append(f.offered, evs)
		f.offeredN += len(evs)
	}
	f.offerMu.Unlock()
	f.poke()
}

// takeOffered returns the batches queued by offer and whether any were
// dropped, and empties the queue.
func (f *feed) takeOffered() ([][]ledger.Event, bool) {
	f.offerMu.Lock()
	defer f.offerMu.Unlock()
	b, o := f.offered, f.overflow
	f.offered, f.offeredN, f.overflow = nil, 0, false
	return b, o
}

// poke wakes the feed; it never blocks.
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
		// A wake-up reads the log, but for this process's commits when
		// they continue the feed (publishOffered).
		due, read := false, true
		select {
		case <-f.s.bg.Done():
			return
		case <-f.kick:
			due, read = f.publishOffered()
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
		if read && f.pull() {
			due = true
		}
		if due {
			cp.Reset(checkpointQuiet)
		}
	}
}

// publishOffered publishes the batches this process handed over that
// continue the feed exactly; it reports whether any event was not a
// checkpoint (so a checkpoint is due) and whether the log must be read:
// a batch began past the feed's end (another process committed between),
// or batches were dropped.
func (f *feed) publishOffered() (due, read bool) {
	batches, overflow := f.takeOffered()
	for _, evs := range batches {
		if len(evs) == 0 {
			continue
		}
		f.mu.RLock()
		next := f.next
		f.mu.RUnlock()
		last := evs[len(evs)-1].LogIndex
		switch {
		case last < next:
			continue // read from the log already
		case evs[0].LogIndex != next || last != next+int64(len(evs))-1:
			return due, true
		}
		if f.publish(next, evs) {
			due = true
		}
	}
	return due, overflow
}

// publish puts evs, whose first log index is next and which follow each
// other, in the ring; it reports whether any was not a checkpoint.
func (f *feed) publish(next int64, evs []ledger.Event) bool {
	due := false
	frames := make([]*frame, 0, len(evs))
	for i := range evs {
		frames = append(frames, newFrame(evs[i]))
		f.s.observeEvent(&evs[i])
		if evs[i].Type != ledger.TypeCheckpoint {
			due = true
		}
	}
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
	return due
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
		f.readEvents.Add(int64(len(evs)))
		if err != nil {
			if f.s.bg.Err() == nil {
				f.mu.Lock()
				f.err = err
				f.mu.Unlock()
				f.s.log.Warn("event feed: reading the log failed; retrying", "err", err)
			}
			return due
		}
		// The log is gap-free; an index out of order means a commit is
		// not visible yet, so stop before it and read again.
		n := 0
		for n < len(evs) && evs[n].LogIndex == next+int64(n) {
			n++
		}
		if n > 0 && f.publish(next, evs[:n]) {
			due = true
		}
		if len(evs) < feedPage || n < len(evs) {
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
