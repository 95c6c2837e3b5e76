package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/verdict"
)

// preparingTier records how a step uses a sandbox.Preparer. It is an
// interface fake over the permissive tier because what it observes — the
// order of the commit and the start, and a commit that fails — happens
// inside the agent; the native tier's own tests run the real launcher's
// hold (internal/sandbox/native, TestPreparedCommandWaitsForStart).
type preparingTier struct {
	sandbox.Tier
	mu    sync.Mutex
	calls []string
	// started, when set, runs at Start, before the command.
	started func()
}

func (p *preparingTier) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, s)
}

func (p *preparingTier) Prepare(ctx context.Context, req sandbox.Request) sandbox.Prepared {
	p.note("prepare " + req.Command)
	return &preparedFake{tier: p, ctx: ctx, req: req}
}

type preparedFake struct {
	tier *preparingTier
	ctx  context.Context
	req  sandbox.Request
}

func (f *preparedFake) Start() sandbox.Result {
	f.tier.note("start " + f.req.Command)
	if f.tier.started != nil {
		f.tier.started()
	}
	return f.tier.Tier.Run(f.ctx, f.req)
}

func (f *preparedFake) Discard() { f.tier.note("discard " + f.req.Command) }

// TestCommandPreparedDuringItsCommit: a tier that can prepare gets the
// command and starts it once the step's commit is done: the action is in
// the ledger when the command starts.
func TestCommandPreparedDuringItsCommit(t *testing.T) {
	h := newHarness(t)
	tier := &preparingTier{Tier: h.env.Tier}
	h.env.Tier = tier
	s := h.session(t, "audit", nil, nil)
	// The action must be in the ledger, committed, when the command
	// starts.
	committed := false
	tier.started = func() {
		for _, ev := range h.events(t, s.ID.String()) {
			committed = committed || ev.Type == "action"
		}
	}
	res, err := s.Step(context.Background(), 1, rcEcho, SourceAPI)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Committed || res.Sandbox == nil || !strings.Contains(res.Sandbox.Stdout, "step") {
		t.Fatalf("step: committed %v, sandbox %+v", res.Committed, res.Sandbox)
	}
	if got := strings.Join(tier.calls, ", "); got != "prepare echo step, start echo step" {
		t.Fatalf("tier calls: %s", got)
	}
	if !committed {
		t.Fatal("the command started before its action was in the ledger")
	}
}

// TestCommandDiscardedWhenItsCommitFails: when the commit of a prepared
// command's intent fails, the command is discarded and never started —
// verify-then-commit, then execute, with the confinement overlapping the
// commit.
func TestCommandDiscardedWhenItsCommitFails(t *testing.T) {
	h := newHarness(t)
	tier := &preparingTier{Tier: h.env.Tier}
	h.env.Tier = tier
	s := h.session(t, "audit", nil, nil)
	// The ledger is gone before the step: the checks allow the command,
	// and the commit of its intent fails.
	h.env.Ledger.Close(context.Background())
	_, err := s.Step(context.Background(), 1, rcEcho, SourceAPI)
	if err == nil || !strings.Contains(err.Error(), "commit step 1") {
		t.Fatalf("step: %v; want the commit's failure", err)
	}
	got := strings.Join(tier.calls, ", ")
	if strings.Contains(got, "start") || !strings.Contains(got, "discard echo step") {
		t.Fatalf("tier calls after a failed commit: %s (err %v)", got, err)
	}
}

// notingGuard answers after the tier was asked to prepare the command
// (waiting up to 10 s for it: a command prepared only after the checks
// would make it wait that long and come second) and notes its review among
// the tier's calls. An interface fake, as stubGuard.
type notingGuard struct {
	tier *preparingTier
	deny bool
}

func (g *notingGuard) Review(context.Context, check.GuardRequest) verdict.Verdict {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.tier.mu.Lock()
		prepared := len(g.tier.calls) > 0
		g.tier.mu.Unlock()
		if prepared {
			break
		}
	}
	g.tier.note("guard")
	if g.deny {
		return verdict.Denial(verdict.CheckGuard, verdict.GuardDeny, "off goal")
	}
	return verdict.New(verdict.CheckGuard, verdict.Allow, verdict.GuardAllow, "ALLOW")
}

// TestCommandPreparedWhileReviewed: the tier prepares a command once the
// checks before the guard allowed it, while the guard (the last check)
// reviews it; it starts after the commit as before.
func TestCommandPreparedWhileReviewed(t *testing.T) {
	h := newHarness(t)
	tier := &preparingTier{Tier: h.env.Tier}
	h.env.Tier = tier
	s := h.session(t, "audit", &notingGuard{tier: tier}, nil)
	res, err := s.Step(context.Background(), 1, rcEcho, SourceAPI)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Committed || res.Sandbox == nil || !strings.Contains(res.Sandbox.Stdout, "step") {
		t.Fatalf("step: committed %v, sandbox %+v", res.Committed, res.Sandbox)
	}
	tier.mu.Lock()
	defer tier.mu.Unlock()
	if got := strings.Join(tier.calls, ", "); got != "prepare echo step, guard, start echo step" {
		t.Fatalf("tier calls: %s", got)
	}
}

// TestCommandPreparedThenDenied: a command the guard denies after it was
// prepared is discarded and never started; one an earlier check denies is
// never prepared.
func TestCommandPreparedThenDenied(t *testing.T) {
	for _, c := range []struct {
		name, raw string
		deny      bool
		want      string
	}{
		{"by the tripwire", rcSudo, false, ""},
		{"by the guard", rcEcho, true, "prepare echo step, guard, discard echo step"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			tier := &preparingTier{Tier: h.env.Tier}
			h.env.Tier = tier
			s := h.session(t, "audit", &notingGuard{tier: tier, deny: c.deny}, nil)
			res, err := s.Step(context.Background(), 1, c.raw, SourceAPI)
			if err != nil {
				t.Fatal(err)
			}
			if res.Committed || res.Sandbox != nil {
				t.Fatalf("a denied command: committed %v, sandbox %+v", res.Committed, res.Sandbox)
			}
			tier.mu.Lock()
			defer tier.mu.Unlock()
			if got := strings.Join(tier.calls, ", "); got != c.want {
				t.Fatalf("tier calls: %s; want %s", got, c.want)
			}
		})
	}
}
