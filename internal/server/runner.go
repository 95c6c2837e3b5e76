package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/llm"
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
	done   chan struct{} // closed when a loop's Run returned
	guard  *guard.Host   // nil when the guard is off

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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.guard.Close(ctx)
	r.guard = nil
}

// runLoop drives an agent-loop session until it ends; Run seals it.
func (r *runner) runLoop(sess *agent.Session, client llm.Client, lim agent.Limits) {
	defer close(r.done)
	defer r.s.runners.remove(r.id)
	defer r.closeGuard()
	ro := agent.RunOptions{LLM: &loopLLM{Client: client, r: r}, Limits: lim, Report: r.report}
	if r.guard != nil {
		ro.Guard = r.guard
	}
	out, err := sess.Run(r.ctx, ro)
	if err != nil && !errors.Is(err, ledger.ErrSealed) && r.ctx.Err() == nil {
		r.s.log.Warn("API session ended with an error", "session", r.id, "err", err)
	}
	_ = out
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
	res, err := r.s.ledger().Seal(context.WithoutCancel(r.ctx), r.id, sr.actor)
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

// appendCredential issues and appends the verifiable credential of a
// completed session (before it is sealed).
func (s *Server) appendCredential(ctx context.Context, id uuid.UUID) error {
	return evidence.Credentials{Ledger: s.ledger()}.IssueCredential(ctx, id)
}

// seal seals a session this instance drives or a session no one drives
// here (docs/design/api.md#sealing).
func (s *Server) seal(ctx context.Context, id uuid.UUID, who *principal) (ledger.SealResult, error) {
	r := s.runners.get(id)
	if r == nil {
		if err := s.denyPending(ctx, id, who); err != nil {
			return ledger.SealResult{}, err
		}
		return s.ledger().Seal(ctx, id, who.actor())
	}
	r.mu.Lock()
	r.sealing = true
	r.mu.Unlock()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	if r.loop {
		req := &sealRequest{actor: who.actor(), reply: make(chan sealReply, 1)}
		for {
			// Gates opened meanwhile are decided as denied too, so the
			// step in flight finishes and the loop reaches its safe point.
			if err := s.denyPending(ctx, id, who); err != nil {
				return ledger.SealResult{}, err
			}
			select {
			case r.sealReq <- req:
				rep := <-req.reply
				return rep.res, rep.err
			case <-r.done:
				return s.ledger().Seal(ctx, id, who.actor())
			case <-tick.C:
			case <-ctx.Done():
				return ledger.SealResult{}, ctx.Err()
			}
		}
	}
	// External: wait for the intent in flight (denying its gates), then
	// seal while holding the queue.
	got := make(chan struct{})
	go func() { r.order.lock(); close(got) }()
	for waiting := true; waiting; {
		if err := s.denyPending(ctx, id, who); err != nil {
			go func() { <-got; r.order.unlock() }()
			return ledger.SealResult{}, err
		}
		select {
		case <-got:
			waiting = false
		case <-tick.C:
		}
	}
	defer r.order.unlock()
	res, err := s.ledger().Seal(ctx, id, who.actor())
	if err == nil {
		s.runners.remove(id)
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
// in the order they were received.
type fifo struct {
	mu    sync.Mutex
	busy  bool            // guarded by mu
	queue []chan struct{} // guarded by mu
}

func (f *fifo) lock() {
	f.mu.Lock()
	if !f.busy {
		f.busy = true
		f.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	f.queue = append(f.queue, ch)
	f.mu.Unlock()
	<-ch
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
	if len(f.queue) > 0 {
		ch := f.queue[0]
		f.queue = f.queue[1:]
		close(ch) // ownership passes to the next in line
		return
	}
	f.busy = false
}
