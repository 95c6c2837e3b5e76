package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/session"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// handleListSessions is route 5.
func (s *Server) handleListSessions(rc *reqCtx) {
	f := ledger.SessionFilter{Limit: 100}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"limit", &f.Limit}, {"offset", &f.Offset}} {
		if v, ok := queryFirst(rc.r, p.name); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				rc.fail(errf(http.StatusBadRequest, "%s: %q is not an integer", p.name, v))
				return
			}
			*p.dst = n
		}
	}
	f.Limit = min(max(f.Limit, 1), 500)
	f.Offset = max(f.Offset, 0)
	if rc.who.ownOnly() {
		f.CreatedBy = rc.who.hash
	}
	if v, ok := queryFirst(rc.r, "status"); ok {
		// An unknown status matches nothing; it never reaches a query.
		if !ledger.Status(v).Valid() {
			rc.writeRawJSON(http.StatusOK, []byte("[]"))
			return
		}
		f.Status = ledger.Status(v)
	}
	// The dashboard's list shows each session's denials (issue 13).
	f.WithDenials = true
	list, err := s.ledger().Sessions(rc.r.Context(), f)
	if err != nil {
		rc.fail(err)
		return
	}
	out := make([]ledger.SessionJSON, 0, len(list))
	for i := range list {
		j := sessionOf(&list[i])
		j.Denials = &list[i].Denials
		out = append(out, j)
	}
	rc.writeJSON(http.StatusOK, out)
}

// handleGetSession is route 7.
func (s *Server) handleGetSession(rc *reqCtx) {
	_, sess, err := s.pathSession(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	rc.writeJSON(http.StatusOK, sessionOf(sess))
}

// handleEvents is route 10.
func (s *Server) handleEvents(rc *reqCtx) {
	v, ok := queryFirst(rc.r, "session_id")
	if !ok {
		rc.fail(errf(http.StatusBadRequest, "session_id is required"))
		return
	}
	id, err := parseUUID(v)
	if err != nil {
		rc.fail(errf(http.StatusBadRequest, "session_id: %v", err))
		return
	}
	if id == uuid.Nil {
		rc.writeRawJSON(http.StatusOK, []byte("[]"))
		return
	}
	evs, err := s.ledger().Events(rc.r.Context(), id, 0, 0)
	if err != nil {
		rc.fail(err)
		return
	}
	rc.writeRawJSON(http.StatusOK, eventsJSON(evs))
}

// createRequest is the body of route 6 (docs/design/api.md#session-create)
// and its caller.
type createRequest struct {
	goal       string
	policy     string
	policyHash string
	agentLoop  bool
	// workspaceMode is the session's workspace mode, "", "ro" or
	// "overlay" (session.Spec.WorkspaceMode).
	workspaceMode string
	// creator is the caller's actor (token hash prefix), creatorHash its
	// token's hash (the session row keeps it for token scopes).
	creator, creatorHash string
}

// handleCreateSession is route 6.
func (s *Server) handleCreateSession(rc *reqCtx) {
	o, err := rc.bodyObject()
	if err != nil {
		rc.fail(err)
		return
	}
	var req createRequest
	var e1, e2, e3, e4, e5 error
	req.goal, _, e1 = o.str("goal", true)
	req.policy, _, e2 = o.str("policy", false)
	req.policyHash, _, e3 = o.str("policy_hash", false)
	loop, set, e4 := o.boolean("agent_loop", false)
	req.workspaceMode, _, e5 = o.str("workspace_mode", false)
	if err := errors.Join(e1, e2, e3, e4, e5); err != nil {
		rc.fail(firstAPIError(e1, e2, e3, e4, e5))
		return
	}
	req.agentLoop = loop || !set
	req.creator, req.creatorHash = rc.who.actor(), rc.who.hash
	req.goal = strings.TrimSpace(req.goal)
	if req.goal == "" {
		rc.fail(errf(http.StatusBadRequest, "goal must not be empty"))
		return
	}
	if strings.ContainsRune(req.goal, 0) {
		rc.fail(errf(http.StatusBadRequest, "goal must not contain NUL characters"))
		return
	}
	sess, err := s.createSession(rc.r.Context(), req)
	if err != nil {
		rc.fail(err)
		return
	}
	rc.writeJSON(http.StatusOK, sessionOf(sess))
}

// firstAPIError returns the first non-nil error.
func firstAPIError(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// createSession creates and starts an API session: it resolves the policy,
// the guard, the tripwire and the limits, commits sequences 0 and 1, and
// starts the loop or prepares for submitted intents. A session without the
// loop first takes a place under the idle-session caps (idle.go).
func (s *Server) createSession(ctx context.Context, req createRequest) (*ledger.Session, error) {
	cfg := s.sessionConfig()
	if !req.agentLoop {
		if err := s.runners.reserve(req.creator, cfg.Server.MaxIdleSessions, cfg.Server.MaxIdleSessionsPerToken); err != nil {
			return nil, err
		}
	}
	counted := !req.agentLoop
	defer func() {
		if counted {
			s.runners.unreserve(req.creator)
		}
	}()
	pol, err := s.resolvePolicy(req.policy, req.policyHash)
	if err != nil {
		return nil, err
	}
	// A workspace mode the configuration or the policy does not allow is
	// the caller's to fix, before a guard starts.
	if _, _, err := session.WorkspaceMode(s.sessionRuntime().Workspace, pol, req.workspaceMode); err != nil {
		return nil, errf(http.StatusUnprocessableEntity, "workspace_mode: %v", err)
	}
	plan, err := guard.Resolve(cfg.Guard, cfg.LLM.Backend, s.opts.GuardFlags)
	if err != nil {
		return nil, errf(http.StatusServiceUnavailable, "the guard is required but not configured: %v (set GUARD_LLM_BACKEND and GUARD_LLM_MODEL, or GUARD_REQUIRED=false, through PUT /api/config)", err)
	}
	_, tw, err := s.sessionTripwire(cfg)
	if err != nil {
		// The text goes to the log, the client gets a 500.
		return nil, err
	}
	var client llm.Client
	if req.agentLoop {
		client, err = session.NewLLM(cfg.LLM, s.log)
		if err != nil {
			return nil, errf(http.StatusServiceUnavailable, "the LLM backend is not usable: %v", err)
		}
	}
	g, err := s.startGuard(ctx, plan, cfg)
	if err != nil {
		return nil, err
	}
	spec := s.sessionSpec(cfg, tw, pol, g)
	spec.Goal, spec.LLM, spec.CreatedBy, spec.WorkspaceMode = req.goal, client, req.creatorHash, req.workspaceMode
	sess, err := session.Create(ctx, s.sessionRuntime(), spec)
	if err != nil {
		g.Close()
		return nil, err
	}
	r := &runner{s: s, id: sess.ID, loop: req.agentLoop, guard: g, done: make(chan struct{}), sealReq: make(chan *sealRequest),
		creator: req.creator, counted: counted, lastUsed: time.Now()}
	r.ctx, r.cancel = context.WithCancel(s.bg)
	// From here the runner holds the place: remove gives it back.
	counted = false
	s.runners.add(r)
	if req.agentLoop {
		go r.runLoop(sess, client)
		return s.ledger().Session(ctx, sess.ID)
	}
	r.ext = sess.External()
	// The prompt scan runs on every new session; a denial ends it aborted
	// before any intent.
	if _, stop, err := r.ext.PromptScan(ctx); err != nil {
		return nil, err
	} else if stop != nil {
		s.runners.remove(sess.ID)
		r.cancel()
		r.closeGuard()
	}
	return s.ledger().Session(ctx, sess.ID)
}

// startGuard starts the guard worker of a session when the plan enables
// it (a skipped guard otherwise); a worker that cannot start is a 503.
func (s *Server) startGuard(ctx context.Context, plan guard.Plan, cfg *config.Config) (*session.Guard, error) {
	g, err := session.StartGuard(ctx, plan, session.GuardOptions{Lookup: s.opts.Lookup, LLM: cfg.LLM, Logger: s.log, Executable: s.opts.GuardExecutable, EnclaveRoots: s.opts.EnclaveRoots})
	if se := (*session.StartError)(nil); errors.As(err, &se) {
		return nil, errf(http.StatusServiceUnavailable, "the guard cannot be started: %v", se.Err)
	}
	return g, err
}

// sessionRuntime is what API sessions run on: the current ledger, the
// tier, the scanner. The loop issues the credential of a completed session
// before its seal; SIEM egress is fed from the commits themselves
// (committed), so no notifier is set and nothing is sent twice.
func (s *Server) sessionRuntime() *session.Runtime {
	return &session.Runtime{Ledger: s.ledger(), Tier: s.opts.Tier, Scanner: s.scanner, Logger: s.log,
		SandboxEnv: s.opts.SandboxEnv, WriteTimeout: s.opts.WriteTimeout, Network: s.cfg.Sandbox.Network,
		Workspace: s.cfg.Sandbox.Workspace, OverlayRoot: session.OverlayRoot(s.cfg.DataDir)}
}

// sessionSpec is what an API session enforces: the server's workspace,
// the tripwire, the policy, the guard, the configured limits, and
// approvals decided through the API's approval table.
func (s *Server) sessionSpec(cfg *config.Config, tw *tripwire.Tripwire, pol *policy.Policy, g *session.Guard) session.Spec {
	l := s.ledger()
	return session.Spec{Workspace: s.opts.Workspace, Tripwire: tw, Policy: pol, Guard: g, Limits: session.Limits(cfg.Agent, pol, 0, false),
		Approvals: func(id uuid.UUID) check.Approver {
			return &agent.APIApprover{Ledger: l, SessionID: id, Poll: s.opts.ApprovalPoll, Wake: s.wake.wait}
		}}
}

// resolvePolicy finds the policy a session enforces: by name, else by hash,
// else none (docs/design/api.md#session-create).
func (s *Server) resolvePolicy(name, hash string) (*policy.Policy, error) {
	hash = strings.ToLower(strings.TrimSpace(hash))
	if name == "" && hash == "" {
		return nil, nil
	}
	if name == "" {
		entries, err := policy.List(s.cfg.DataDir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Err == nil && e.SHA256 == hash {
				name = e.Name
				break
			}
		}
		if name == "" {
			return nil, errf(http.StatusBadRequest, "policy_hash %s matches no available policy (GET /api/policies lists them)", hash)
		}
	}
	data, err := s.policyBytes(name)
	if err != nil {
		return nil, err
	}
	p, err := policy.Parse(name+".toml", data, policy.Options{})
	if err != nil {
		return nil, errf(http.StatusBadRequest, "policy %s does not load: %v", name, err)
	}
	if hash != "" && p.SHA256() != hash {
		return nil, errf(http.StatusBadRequest, "policy %s has hash %s, which disagrees with policy_hash %s", name, p.SHA256(), hash)
	}
	return p, nil
}

// policyBytes returns a shipped pack or a data-dir policy by name; an
// unknown name is a 400 for session creation.
func (s *Server) policyBytes(name string) ([]byte, error) {
	if b, ok := policy.PackBytes(name); ok {
		return b, nil
	}
	if !validPolicyName(name) {
		return nil, errf(http.StatusBadRequest, "policy %q: not a valid policy name", name)
	}
	b, err := os.ReadFile(filepath.Join(s.cfg.DataDir, "policies", name+".toml"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errf(http.StatusBadRequest, "policy %q not found (GET /api/policies lists them)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("read policy %s: %w", name, err)
	}
	return b, nil
}

// handleSeal is route 8.
func (s *Server) handleSeal(rc *reqCtx) {
	id, _, err := s.pathSession(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	res, err := s.seal(rc.r.Context(), id, rc.who)
	if err != nil {
		rc.fail(err)
		return
	}
	out := map[string]any{
		"ok": true, "session_id": id.String(), "status": string(res.Status), "sealed_at": ts(res.SealedAt),
		"already_sealed": res.AlreadySealed, "seal_event": map[string]any{"id": res.Event.ID(), "sequence": res.Event.Seq, "content_hash": res.Event.Hash.String()},
	}
	rc.writeJSON(http.StatusOK, out)
}

// clientTypes are the payload types a client may append as-is
// (docs/design/api.md#appending-events), with their exact fields.
var clientTypes = map[string]map[string]string{
	ledger.TypeObservation: {"content": "string"},
	ledger.TypeThought:     {"content": "string"},
	ledger.TypeAction:      {"name": "string", "params": "object"},
}

// knownTypes are the server-side payload types a client cannot forge.
var knownTypes = map[string]bool{
	ledger.TypeGenesis: true, ledger.TypePromptInput: true, ledger.TypeSchemaError: true, ledger.TypeCircuitBreaker: true,
	ledger.TypeApprovalRequired: true, ledger.TypeApprovalDecision: true, ledger.TypeKeyRotation: true, ledger.TypeKeyRevocation: true,
	ledger.TypeVerifiableCredential: true, ledger.TypeChatMessage: true, ledger.TypeAnchor: true, ledger.TypeCrossLedgerSeal: true,
	ledger.TypeIntentProposed: true, ledger.TypeCheckVerdict: true, ledger.TypeSessionHalted: true, ledger.TypeSandboxResult: true,
	ledger.TypeSessionSealed: true, ledger.TypeCheckpoint: true, ledger.TypeAdminChange: true, ledger.TypeSnapshot: true,
	ledger.TypeRecovery: true, ledger.TypeEgress: true, ledger.TypeWorkspaceDiff: true, ledger.TypeWorkspaceApplied: true, ledger.TypeWorkspaceDiscarded: true,
}

// classifyAppend decides how a route-9 body is stored: as-is for an exact
// client variant, refused for a server type, wrapped otherwise.
func classifyAppend(body []byte) (typ string, payload []byte, err error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", nil, errf(http.StatusBadRequest, "invalid JSON: %v", err)
	}
	if m, ok := v.(map[string]any); ok {
		if t, ok := m["type"].(string); ok {
			if fields, ok := clientTypes[t]; ok && exactVariant(m, fields) {
				return t, body, nil
			}
			if knownTypes[t] {
				return "", nil, errf(http.StatusUnprocessableEntity, "event type %q is written by IronVise itself and cannot be appended (client types: observation, thought, action)", t)
			}
		}
	}
	// Anything else is kept, faithfully, as an observation's content.
	compact, err := marshalPlain(v)
	if err != nil {
		return "", nil, errf(http.StatusBadRequest, "invalid JSON: %v", err)
	}
	wrapped, err := marshalPlain(map[string]string{"type": ledger.TypeObservation, "content": string(compact)})
	if err != nil {
		return "", nil, err
	}
	return ledger.TypeObservation, wrapped, nil
}

// exactVariant reports whether m has exactly type plus the variant's
// fields, with the right JSON types.
func exactVariant(m map[string]any, fields map[string]string) bool {
	if len(m) != len(fields)+1 {
		return false
	}
	for k, kind := range fields {
		v, ok := m[k]
		if !ok {
			return false
		}
		switch kind {
		case "string":
			if _, ok := v.(string); !ok {
				return false
			}
		case "object":
			if _, ok := v.(map[string]any); !ok {
				return false
			}
		}
	}
	return true
}

// handleAppend is route 9.
func (s *Server) handleAppend(rc *reqCtx) {
	typ, payload, err := classifyAppend(rc.body)
	if err != nil {
		rc.fail(err)
		return
	}
	id, sess, err := s.writableSession(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	// A client's event is recorded as the client's ("event_origin":
	// "client", inside the signed bytes): evidence checks never accept it
	// as an observation of IronVise, so an agent token cannot write the
	// "proof" its own findings cite (issue 13, item 1).
	ev, err := s.ledger().AppendClient(rc.r.Context(), id, typ, json.RawMessage(payload))
	switch {
	case errors.Is(err, ledger.ErrSealed):
		rc.fail(sealedConflict(sess))
		return
	case errors.Is(err, ledger.ErrNotFound):
		rc.fail(errf(http.StatusNotFound, "session %s not found", id))
		return
	case errors.Is(err, ledger.ErrInvalidPayload):
		rc.fail(errf(http.StatusBadRequest, "the payload cannot be stored: %v", err))
		return
	case errors.Is(err, ledger.ErrGoalMismatch):
		rc.fail(errf(http.StatusConflict, "session %s failed goal anchoring and was aborted", id))
		return
	case err != nil:
		rc.fail(err)
		return
	}
	rc.writeJSON(http.StatusCreated, map[string]any{
		"id": ev.ID(), "sequence": ev.Seq, "payload_hash": ev.Hash.String(), "content_hash": ev.Hash.String(),
		"session_id": id.String(), "type": ev.Type, "event_origin": ledger.OriginClient,
	})
}

// marshalPlain is json.Marshal without HTML escaping, so text keeps its
// characters (object keys come out sorted).
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writableSession resolves the path's session for a request that appends
// to its chain: 400 or 404 as pathSession, 409 once it is sealed.
func (s *Server) writableSession(rc *reqCtx) (uuid.UUID, *ledger.Session, error) {
	id, sess, err := s.pathSession(rc)
	if err == nil && sess.Sealed() {
		err = sealedConflict(sess)
	}
	return id, sess, err
}

// sealedConflict is the 409 of an append to a sealed session.
func sealedConflict(sess *ledger.Session) error {
	return errf(http.StatusConflict, "session %s is sealed: its chain is closed for good%s", sess.ID, loopSealedHint(sess))
}

// loopSealedHint explains a 409 the reference SDK meets: its
// create_session cannot send "agent_loop": false, so IronVise's own loop
// drives the session, ends it and seals it, and the SDK's hooks appending
// afterwards find it sealed. docs/api.md "SDK compatibility".
func loopSealedHint(sess *ledger.Session) string {
	if !sess.AgentLoop {
		return ""
	}
	return "; it ran IronVise's own agent loop, which sealed it when it ended: to append from your own agent, create the session with \"agent_loop\": false (docs/api.md \"SDK compatibility\")"
}
