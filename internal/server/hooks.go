package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/hook"
)

// Agent hooks over HTTP: POST /api/hooks/claude-code and
// /api/hooks/codex take the agent's hook event as the body and answer the
// decision as the agent's JSON output, always with status 200. An agent
// treats a non-2xx answer, or no answer, as a non-blocking error and lets
// the call run (Claude Code's HTTP hooks; Codex, which has no HTTP hook,
// reaches these routes through a command such as curl), so every failure
// — a refused token, a body over the limit, a ledger that cannot be
// written — is answered as a block in the same JSON.

// hookLockTimeout bounds the wait for another hook request of the same
// agent session.
const hookLockTimeout = 20 * time.Second

// hookDecisionTimeout bounds one answer, below the agents' default hook
// timeouts.
const hookDecisionTimeout = 30 * time.Second

// handleHook answers one hook event of agent ag.
func (s *Server) handleHook(ag hook.Agent) func(*reqCtx) {
	return func(rc *reqCtx) {
		// The agent gives up on a slow hook and lets the call run: block
		// first. The decision still completes its records.
		done := make(chan hook.Answer, 1)
		ctx, body, policy := context.WithoutCancel(rc.r.Context()), rc.body, rc.r.URL.Query().Get("policy")
		go func() { done <- s.hookAnswer(ctx, ag, body, policy) }()
		var ans hook.Answer
		select {
		case ans = <-done:
		case <-time.After(hookDecisionTimeout):
			ans = hook.Blocked(hook.EventName(rc.body), fmt.Errorf("no decision within %s", hookDecisionTimeout))
		}
		rc.writeRawJSON(http.StatusOK, ag.JSON(ans))
	}
}

// hookAnswer decides the event in rc's body; every failure is a block.
func (s *Server) hookAnswer(ctx context.Context, ag hook.Agent, body []byte, policyName string) (ans hook.Answer) {
	event := hook.EventName(body)
	defer func() {
		if r := recover(); r != nil {
			ans = hook.Blocked(event, fmt.Errorf("internal error: %v", r))
		}
	}()
	ev, err := hook.ParseEvent(body)
	if err != nil {
		return hook.Blocked(event, err)
	}
	switch ev.HookEventName {
	case hook.EventPreToolUse, hook.EventPostToolUse, hook.EventSessionStart, hook.EventSessionEnd:
	default:
		return hook.Answer{Decision: hook.Allow, Event: ev.HookEventName}
	}
	fail := func(err error) hook.Answer { return hook.Blocked(ev.HookEventName, err) }
	cfg := s.sessionConfig()
	pol, err := s.resolvePolicy(policyName, "")
	if err != nil {
		return fail(err)
	}
	_, tw, err := s.sessionTripwire(cfg)
	if err != nil {
		return fail(err)
	}
	plan, err := guard.Resolve(cfg.Guard, cfg.LLM.Backend, s.opts.GuardFlags)
	if err != nil {
		return fail(fmt.Errorf("the guard is required but not configured: %w (set GUARD_LLM_BACKEND and GUARD_LLM_MODEL, or GUARD_REQUIRED=false)", err))
	}
	g, err := s.startGuard(ctx, plan, cfg)
	if err != nil {
		return fail(err)
	}
	defer g.Close()
	st, err := hook.Lock(filepath.Join(cfg.DataDir, "hooks"), ag, ev.SessionID, hookLockTimeout)
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	rt := s.sessionRuntime()
	rt.Tier = hook.AgentTier{}
	env := &hook.Env{Agent: ag, Runtime: rt, Workspace: s.opts.Workspace, Tripwire: tw, Policy: pol, Guard: g, MCPRules: hook.PolicyMCPRules{Policy: pol}}
	// ctx does not end when the agent hangs up: what was committed must
	// be complete.
	return env.Handle(ctx, st, ev)
}

// blockHookError answers a failure of a hook route as a block, keeping
// the status it would have had in a header for the operator.
func blockHookError(ag hook.Agent) func(rc *reqCtx, status int, msg string) {
	return func(rc *reqCtx, status int, msg string) {
		rc.w.Header().Set("X-Ironvise-Error-Status", strconv.Itoa(status))
		ans := hook.Blocked(hook.EventName(rc.body), errors.New(msg))
		rc.writeRawJSON(http.StatusOK, ag.JSON(ans))
	}
}
