package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/session"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// Idle API sessions (issue 13, item 3). A session created with
// "agent_loop": false waits for intents for as long as its client likes;
// 10,000 of them once held 1 GB that never came back. Three things bound
// that:
//
//   - the compiled tripwire — most of a session's memory — is shared by
//     every session of one tripwire configuration (tripwireCache);
//   - caps on the sessions that may wait at once, per creating token and
//     in all (reserve), answered 429;
//   - a session idle for ECTO_SESSION_IDLE_SECS goes dormant (evictIdle):
//     its agent state and its guard worker are dropped, and the next
//     intent rebuilds them from the ledger (revive).

// tripwireCache holds the compiled tripwire of the current configuration:
// the file's bytes and the variables LoadConfig reads are its key.
type tripwireCache struct {
	mu  sync.Mutex
	key string             // guarded by mu
	tc  *tripwire.Config   // guarded by mu
	tw  *tripwire.Tripwire // guarded by mu
}

// sessionTripwire returns the tripwire new and revived sessions enforce,
// compiling it only when its inputs changed. A tripwire.Tripwire is safe
// for concurrent use.
func (s *Server) sessionTripwire(cfg *config.Config) (*tripwire.Config, *tripwire.Tripwire, error) {
	path := filepath.Join(cfg.DataDir, tripwireFile)
	h := sha256.New()
	switch b, err := os.ReadFile(path); {
	case errors.Is(err, os.ErrNotExist):
		h.Write([]byte("defaults"))
	case err != nil:
		return nil, nil, fmt.Errorf("server: %s cannot be used: %w", path, err)
	default:
		h.Write([]byte("file\x00"))
		h.Write(b)
	}
	fmt.Fprintf(h, "\x00%s\x00%v\x00%s", s.opts.Workspace, cfg.Agent.AllowedDomainsSet, strings.Join(cfg.Agent.AllowedDomains, "\x00"))
	key := hex.EncodeToString(h.Sum(nil))
	c := &s.twCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key == key {
		return c.tc, withEgress(c.tw, cfg), nil
	}
	tc, err := s.loadTripwireConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	// The protected paths are the start's: the tier hides exactly those.
	tw := tripwire.New(tc, tripwire.Options{Workspace: s.opts.Workspace, Protected: s.opts.Protected})
	c.key, c.tc, c.tw = key, tc, tw
	return tc, withEgress(tw, cfg), nil
}

// withEgress gives the tripwire the allow list of proxy mode, so that it
// refuses a command's destination with the reason the egress proxy would
// give (docs/checks.md#commands-in-proxy-mode); in mode none it is tw.
func withEgress(tw *tripwire.Tripwire, cfg *config.Config) *tripwire.Tripwire {
	n := cfg.Sandbox.Network
	if !n.Proxy() {
		return tw
	}
	return tw.WithEgress(egress.NewRules(n.AllowedDomains, n.AllowCIDRs))
}

// reserve takes a place for a new external session of creator under the
// caps, or says which cap is reached. The place is the session's until
// remove (or unreserve when creation fails).
func (rs *runners) reserve(creator string, total, perCreator int) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.byCreator[creator] >= perCreator {
		return errf(http.StatusTooManyRequests, "this token already has %d API sessions waiting for intents on this instance (ECTO_MAX_IDLE_SESSIONS_PER_TOKEN=%d); complete or seal one (POST /api/sessions/{id}/seal) before creating another", rs.byCreator[creator], perCreator)
	}
	if rs.external >= total {
		return errf(http.StatusTooManyRequests, "this instance already has %d API sessions waiting for intents (ECTO_MAX_IDLE_SESSIONS=%d); complete or seal some, or ask the operator to raise the limit", rs.external, total)
	}
	rs.external++
	rs.byCreator[creator]++
	return nil
}

// unreserve gives back a place reserve took.
func (rs *runners) unreserve(creator string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.unreserveLocked(creator)
}

// unreserveLocked is unreserve. rs.mu must be held.
func (rs *runners) unreserveLocked(creator string) {
	rs.external--
	if n := rs.byCreator[creator] - 1; n > 0 {
		rs.byCreator[creator] = n
	} else {
		delete(rs.byCreator, creator)
	}
}

// idleCounts returns the external sessions holding a place, in all and
// dormant.
func (rs *runners) idleCounts() (external, dormant int) {
	for _, r := range rs.all() {
		if r.loop {
			continue
		}
		external++
		if r.order.tryLock() {
			if r.dormant() {
				dormant++
			}
			r.order.unlock()
		}
	}
	return external, dormant
}

// touch records that an intent of r finished now.
func (r *runner) touch(now time.Time) {
	r.mu.Lock()
	r.lastUsed = now
	r.mu.Unlock()
}

// evictIdle makes dormant every external session that took no intent for
// idle: its agent state and guard worker are dropped. A session with an
// intent in flight or queued is left alone (its order lock is taken).
func (s *Server) evictIdle(now time.Time, idle time.Duration) int {
	n := 0
	for _, r := range s.runners.all() {
		if r.loop {
			continue
		}
		r.mu.Lock()
		stale := now.Sub(r.lastUsed) >= idle
		r.mu.Unlock()
		if !stale || !r.order.tryLock() {
			continue
		}
		if r.ext != nil && r.ext.Ended() == nil {
			r.mu.Lock()
			r.steps = r.ext.Steps()
			r.mu.Unlock()
			r.ext = nil
			r.closeGuard()
			n++
		}
		r.order.unlock()
	}
	return n
}

// revive rebuilds a dormant session from the ledger: the tripwire and the
// policy its genesis names, a guard worker when the session requires one,
// and the loop state replayed from its chain (agent.ResumeExternal).
// r.order must be held.
func (s *Server) revive(ctx context.Context, r *runner) error {
	l := s.ledger()
	sess, err := l.Session(ctx, r.id)
	if err != nil {
		return err
	}
	evs, err := l.Events(ctx, r.id, 0, 0)
	if err != nil {
		return err
	}
	if len(evs) == 0 || evs[0].Type != ledger.TypeGenesis {
		return fmt.Errorf("server: revive session %s: its chain has no genesis", r.id)
	}
	g, err := genesisOf(&evs[0])
	if err != nil {
		return fmt.Errorf("server: revive session %s: %w", r.id, err)
	}
	cfg := s.sessionConfig()
	// The session continues under what its genesis recorded, or not at
	// all: a different tripwire or policy would enforce rules the signed
	// record does not name.
	tc, tw, err := s.sessionTripwire(cfg)
	if err != nil {
		return err
	}
	if tc.SHA256 != g.TripwireHash {
		return errf(http.StatusConflict, "session %s started under tripwire %s, and tripwire.json is now %s: it cannot continue under rules its record does not name; start a new session", r.id, short(g.TripwireHash), short(tc.SHA256))
	}
	pol, err := s.resolvePolicy("", sess.PolicyHash)
	if err != nil {
		return errf(http.StatusConflict, "session %s enforces policy %s, which is no longer available: %v; restore the policy or start a new session", r.id, short(sess.PolicyHash), err)
	}
	plan, err := guard.Resolve(cfg.Guard, cfg.LLM.Backend, s.opts.GuardFlags)
	if err != nil || (g.GuardRequired && !plan.Enabled) {
		return errf(http.StatusServiceUnavailable, "session %s requires the guard, which is not configured now (set GUARD_LLM_BACKEND and GUARD_LLM_MODEL through PUT /api/config)", r.id)
	}
	gd, err := s.startGuard(ctx, plan, cfg)
	if err != nil {
		return err
	}
	spec := s.sessionSpec(cfg, tw, pol, gd)
	if g.Workspace != nil {
		// The session keeps the workspace mode it started with.
		spec.WorkspaceMode = g.Workspace.Mode
	}
	ext, err := session.Bind(s.sessionRuntime(), r.id, sess.Goal, spec).Resume(evs)
	if err != nil {
		gd.Close()
		return fmt.Errorf("server: revive session %s: %w", r.id, err)
	}
	r.ext, r.guard = ext, gd
	return nil
}

// genesisRecord is what revive reads from a session's genesis.
type genesisRecord struct {
	TripwireHash  string                   `json:"tripwire_hash"`
	GuardRequired bool                     `json:"guard_required"`
	Workspace     *ledger.SessionWorkspace `json:"workspace"`
}

func genesisOf(ev *ledger.Event) (genesisRecord, error) {
	var g genesisRecord
	if err := json.Unmarshal(ev.Payload, &g); err != nil {
		return g, fmt.Errorf("read its genesis: %w", err)
	}
	return g, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "(none)"
	}
	return h
}

// reclaim takes back the sessions this data directory's owner id holds,
// which its previous process left running (it died without recording
// their end: kill -9, a crash, a power cut). An API session waits for
// intents and goes on: it is registered dormant, and its next intent
// rebuilds it from the ledger (revive). An agent-loop session cannot —
// its model conversation died with the process — and is failed with a
// recovery event saying so. Without a stable owner id (s.owner nil) there
// is nothing to reclaim; Recover fails such orphans once their lease
// lapses.
func (s *Server) reclaim(ctx context.Context) error {
	if s.owner == nil {
		return nil
	}
	l := s.ledger()
	ids, err := l.Owned(ctx)
	if err != nil {
		return err
	}
	if err := l.RenewLeases(ctx); err != nil {
		return err
	}
	var loops []uuid.UUID
	for _, id := range ids {
		sess, err := l.Session(ctx, id)
		if err != nil {
			return err
		}
		if sess.AgentLoop {
			loops = append(loops, id)
			continue
		}
		r := &runner{s: s, id: id, done: make(chan struct{}), sealReq: make(chan *sealRequest), counted: true, lastUsed: time.Now(), steps: -1}
		if len(sess.CreatedBy) >= 16 {
			// The creator's place under the per-token cap (an actor is a
			// token hash's first 16 hex digits, principal.actor).
			r.creator = sess.CreatedBy[:16]
		}
		r.ctx, r.cancel = context.WithCancel(s.bg)
		s.runners.adopt(r)
	}
	if _, err := l.RecoverOwned(ctx, loops, "its agent loop stopped with the process that ran it"); err != nil {
		return err
	}
	if n := len(ids) - len(loops); n > 0 {
		s.log.Info("reclaimed the API sessions the previous process left running", "sessions", n)
	}
	return nil
}

// adopt registers a reclaimed session with its place under the caps,
// whatever they say: it exists already.
func (rs *runners) adopt(r *runner) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.external++
	rs.byCreator[r.creator]++
	rs.m[r.id] = r
}

// lastStep returns the highest step of a session's intents, for the end
// of a session whose step count is not known (a reclaimed, dormant one).
func lastStep(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (int, error) {
	evs, err := l.Events(ctx, id, 0, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range evs {
		if evs[i].Type != ledger.TypeIntentProposed {
			continue
		}
		var p struct {
			Step int `json:"step"`
		}
		if json.Unmarshal(evs[i].Payload, &p) == nil {
			n = max(n, p.Step)
		}
	}
	return n, nil
}
