package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/session"
)

// runner is a session this instance drives: its agent loop, or the queue
// of its submitted intents. Only the creating instance drives a session.
type runner struct {
	s    *Server
	id   uuid.UUID
	loop bool
	ctx  context.Context
	// cancel stops the session's work (shutdown, or a seal from another
	// instance).
	cancel context.CancelFunc
	done   chan struct{}  // closed when a loop's Run returned
	guard  *session.Guard // nil once closed

	// External sessions: submissions in arrival order. ext is nil while
	// the session is dormant (idle.go): its state was dropped and the
	// next intent rebuilds it from the ledger. ext and guard are touched
	// only by the holder of order.
	ext   *agent.External
	order fifo
	// creator is the actor (token hash prefix) that created an external
	// session; counted says the session holds a place under the idle-
	// session caps (released by runners.remove).
	creator string
	counted bool
	// lastUsed is when the last intent finished; steps the steps taken
	// when the session went dormant. Both guarded by mu.
	lastUsed time.Time
	steps    int

	// sealReq hands a seal to the loop at its next safe point (between
	// steps, or while it waits for the model).
	sealReq chan *sealRequest

	mu      sync.Mutex
	sealing bool // guarded by mu: no new intents
}

// dormant reports whether an external session's state was dropped.
// r.order must be held.
func (r *runner) dormant() bool { return !r.loop && r.ext == nil }

type sealRequest struct {
	actor string
	reply chan sealReply
}

type sealReply struct {
	res ledger.SealResult
	err error
}

// runners is the registry of the sessions this instance drives.
type runners struct {
	mu sync.Mutex
	m  map[uuid.UUID]*runner // guarded by mu
	// external counts the external sessions holding a place under the
	// idle-session caps, in all and by creator (idle.go); guarded by mu.
	external  int
	byCreator map[string]int
}

func newRunners() *runners {
	return &runners{m: map[uuid.UUID]*runner{}, byCreator: map[string]int{}}
}

func (rs *runners) get(id uuid.UUID) *runner {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.m[id]
}

func (rs *runners) add(r *runner) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.m[r.id] = r
}

func (rs *runners) remove(id uuid.UUID) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r := rs.m[id]; r != nil && r.counted {
		rs.unreserveLocked(r.creator)
	}
	delete(rs.m, id)
}

func (rs *runners) all() []*runner {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]*runner, 0, len(rs.m))
	for _, r := range rs.m {
		out = append(out, r)
	}
	return out
}

// sealedElsewhere stops the work of a local session that was sealed
// (possibly by another instance): its chain is closed for good. An
// external session leaves the registry (and the idle-session caps) once
// no intent is in flight; the one in flight gets ErrSealed.
func (rs *runners) sealedElsewhere(id uuid.UUID) {
	if r := rs.get(id); r != nil {
		r.mu.Lock()
		r.sealing = true
		r.mu.Unlock()
		if r.loop {
			r.cancel()
			return
		}
		go func() {
			r.order.lock()
			defer r.order.unlock()
			rs.remove(id)
			r.closeGuard()
		}()
	}
}

// stopWorkers bounds the sessions whose end stopAll records at once: the
// ledger commits concurrent writes in one transaction, so ten thousand
// idle sessions end in seconds rather than one after another (issue 13:
// shutdown took 37 s).
const stopWorkers = 32

// stopAll stops every session at shutdown and records its end: a loop
// records halt_interrupted, ends aborted and seals itself; an externally
// driven session is ended aborted (its client seals it), a dormant one
// without rebuilding it.
func (rs *runners) stopAll(ctx context.Context) {
	list := rs.all()
	for _, r := range list {
		r.cancel()
	}
	work := make(chan *runner)
	var wg sync.WaitGroup
	for range stopWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				r.stopExternal(ctx)
				rs.remove(r.id)
			}
		}()
	}
	for _, r := range list {
		if !r.loop {
			work <- r
		}
	}
	close(work)
	wg.Wait()
	for _, r := range list {
		if r.loop {
			select {
			case <-r.done:
			case <-ctx.Done():
			}
		}
	}
}

// stopExternal records the end of an external session at shutdown.
func (r *runner) stopExternal(ctx context.Context) {
	r.order.lock()
	defer r.order.unlock()
	const msg = "the server is shutting down"
	wctx := context.WithoutCancel(ctx)
	var err error
	if r.dormant() {
		r.mu.Lock()
		steps := r.steps
		r.mu.Unlock()
		if steps < 0 {
			steps, err = lastStep(wctx, r.s.ledger(), r.id)
		}
		if err == nil {
			err = agent.InterruptDormant(wctx, r.s.ledger(), r.id, steps, msg)
		}
		if errors.Is(err, ledger.ErrSealed) || errors.Is(err, ledger.ErrNotRunning) {
			err = nil
		}
	} else {
		err = r.ext.Interrupt(wctx, msg)
	}
	if err != nil {
		r.s.log.Warn("record the end of an API session at shutdown", "session", r.id, "err", err)
	}
	r.closeGuard()
}

// closeGuard stops the session's guard worker, if any. The caller owns
// r.guard (see the runner fields).
func (r *runner) closeGuard() {
	if r.guard == nil {
		return
	}
	r.guard.Close()
	r.guard = nil
}

// runLoop drives an agent-loop session until it ends; Run seals it.
func (r *runner) runLoop(sess *session.Session, client llm.Client) {
	defer close(r.done)
	defer r.s.runners.remove(r.id)
	defer r.closeGuard()
	_, err := sess.Run(r.ctx, session.RunOptions{LLM: &loopLLM{Client: client, r: r}, Report: r.report})
	if err != nil && !errors.Is(err, ledger.ErrSealed) && r.ctx.Err() == nil {
		r.s.log.Warn("API session ended with an error", "session", r.id, "err", err)
	}
}

// report is the loop's per-step callback, called after each step is
// recorded and before the loop decides whether to go on: the safe point
// where a seal takes effect.
func (r *runner) report(agent.StepReport) {
	select {
	case sr := <-r.sealReq:
		r.sealNow(sr)
	default:
	}
}

// sealNow seals from inside the loop, then stops it: nothing is appended to
// the chain after the seal.
func (r *runner) sealNow(sr *sealRequest) {
	res, err := session.Seal(context.WithoutCancel(r.ctx), r.s.ledger(), r.id, sr.actor)
	sr.reply <- sealReply{res, err}
	r.cancel()
}

// loopLLM wraps the session's model client: a seal requested while the loop
// waits for the model is taken at once, and token counts reach the metrics.
type loopLLM struct {
	llm.Client
	r *runner
}

// Complete implements llm.Client.
func (c *loopLLM) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	select {
	case sr := <-c.r.sealReq:
		c.r.sealNow(sr)
		return llm.Response{}, context.Canceled
	default:
	}
	type result struct {
		resp llm.Response
		err  error
	}
	ch := make(chan result, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		resp, err := c.Client.Complete(cctx, req)
		ch <- result{resp, err}
	}()
	select {
	case res := <-ch:
		n := len(req.System)
		for _, m := range req.Messages {
			n += len(m.Content)
		}
		n += len(res.resp.Text)
		c.r.s.metrics.llmTokens.Add(float64(n / 4))
		return res.resp, res.err
	case sr := <-c.r.sealReq:
		cancel()
		<-ch
		c.r.sealNow(sr)
		return llm.Response{}, context.Canceled
	}
}

// sealPoll is how often a seal waiting for a session's safe point decides
// the approval gates opened meanwhile.
const sealPoll = 100 * time.Millisecond

// seal seals a session this instance drives or a session no one drives
// here. Pending approval gates are decided as denied first, so the step in
// flight can finish.
func (s *Server) seal(ctx context.Context, id uuid.UUID, who *principal) (ledger.SealResult, error) {
	r := s.runners.get(id)
	if r == nil {
		if err := s.denyPending(ctx, id, who); err != nil {
			return ledger.SealResult{}, err
		}
		return session.Seal(ctx, s.ledger(), id, who.actor())
	}
	r.mu.Lock()
	r.sealing = true
	r.mu.Unlock()
	if r.loop {
		return s.sealLoop(ctx, r, who)
	}
	return s.sealExternal(ctx, r, who)
}

// sealLoop hands the seal to a running loop at its next safe point, or
// seals the session itself once the loop has returned.
func (s *Server) sealLoop(ctx context.Context, r *runner, who *principal) (ledger.SealResult, error) {
	tick := time.NewTicker(sealPoll)
	defer tick.Stop()
	req := &sealRequest{actor: who.actor(), reply: make(chan sealReply, 1)}
	for {
		// Gates opened meanwhile are decided as denied too, so the step
		// in flight finishes and the loop reaches its safe point.
		if err := s.denyPending(ctx, r.id, who); err != nil {
			return ledger.SealResult{}, err
		}
		select {
		case r.sealReq <- req:
			rep := <-req.reply
			return rep.res, rep.err
		case <-r.done:
			return session.Seal(ctx, s.ledger(), r.id, who.actor())
		case <-tick.C:
		case <-ctx.Done():
			return ledger.SealResult{}, ctx.Err()
		}
	}
}

// sealExternal waits for the intent in flight of an external session
// (denying its gates, so it can finish), then seals while holding the
// queue, so no intent starts after the seal.
func (s *Server) sealExternal(ctx context.Context, r *runner, who *principal) (ledger.SealResult, error) {
	tick := time.NewTicker(sealPoll)
	defer tick.Stop()
	ticket := r.order.enqueue()
	for ticket != nil {
		if err := s.denyPending(ctx, r.id, who); err != nil {
			r.order.abandon(ticket)
			return ledger.SealResult{}, err
		}
		select {
		case <-ticket:
			ticket = nil
		case <-tick.C:
		case <-ctx.Done():
			r.order.abandon(ticket)
			return ledger.SealResult{}, ctx.Err()
		}
	}
	defer r.order.unlock()
	res, err := session.Seal(ctx, s.ledger(), r.id, who.actor())
	if err == nil {
		s.runners.remove(r.id)
		r.cancel()
		r.closeGuard()
	}
	return res, err
}

// denyPending decides every pending gate of a session as denied by the
// sealing caller, reason "session sealed"
// (docs/design/checks.md#check-events).
func (s *Server) denyPending(ctx context.Context, id uuid.UUID, who *principal) error {
	l := s.ledger()
	for i := 0; i < 100; i++ {
		a, err := l.PendingApproval(ctx, id)
		if errors.Is(err, ledger.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read pending approvals: %w", err)
		}
		reason := "session sealed"
		err = l.DecideApproval(ctx, a.GateID, false, agent.EncodeDecision(who.decidedBy(), &reason))
		if err != nil && !errors.Is(err, ledger.ErrAlreadyDecided) {
			return fmt.Errorf("decide a pending approval: %w", err)
		}
		s.wake.signal()
	}
	return nil
}

// fifo is a lock granted in arrival order, so intents of one session run
// in the order they were received. A waiter holds a ticket: a channel
// closed when the lock passes to it, so it can wait in a select beside its
// context and withdraw (abandon) without a goroutine left behind.
type fifo struct {
	mu    sync.Mutex
	busy  bool            // guarded by mu
	queue []chan struct{} // guarded by mu: the tickets, oldest first
}

// enqueue takes the lock when it is free and returns nil; otherwise it
// queues a ticket that is closed once the lock is the caller's. The caller
// must either receive from the ticket (and later unlock) or abandon it.
func (f *fifo) enqueue() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.busy {
		f.busy = true
		return nil
	}
	ch := make(chan struct{})
	f.queue = append(f.queue, ch)
	return ch
}

// abandon withdraws a ticket from enqueue. When the lock was handed to it
// meanwhile, it is passed on, so a waiter that gave up never keeps it.
func (f *fifo) abandon(ticket <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, ch := range f.queue {
		if ch == ticket {
			f.queue = append(f.queue[:i], f.queue[i+1:]...)
			return
		}
	}
	f.unlockLocked()
}

// lock waits for the lock without a deadline.
func (f *fifo) lock() {
	if t := f.enqueue(); t != nil {
		<-t
	}
}

// tryLock takes the lock when it is free, without waiting.
func (f *fifo) tryLock() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.busy {
		return false
	}
	f.busy = true
	return true
}

func (f *fifo) unlock() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unlockLocked()
}

// unlockLocked passes the lock to the oldest ticket, or frees it.
// f.mu must be held.
func (f *fifo) unlockLocked() {
	if len(f.queue) > 0 {
		ch := f.queue[0]
		f.queue = f.queue[1:]
		close(ch) // ownership passes to the next in line
		return
	}
	f.busy = false
}
