package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Token scopes (issue 13, item 7). Roles are global: an agent token may
// write to every session. A token created with "scope":"own_sessions"
// reaches only the sessions it created (their rows record the creating
// token's hash): every route that names a session — in its path, or in a
// session_id query parameter — answers 403 for another's, session lists
// show only its own, and the event stream carries only their events.
//
// The check runs in the pipeline, before any handler, on every route with
// an {id} parameter except the few that name something else, so a route
// added later is covered without knowing about scopes.

// notSessionIDs are the routes whose {id} is not a session id (all of
// them admin-only, which a scoped token never is).
var notSessionIDs = []string{"/api/webhooks/"}

// checkScope refuses a scoped caller a session it did not create. An id
// that does not parse, or names no session, is left to the handler (400,
// 404).
func (s *Server) checkScope(rc *reqCtx) error {
	if rc.who == nil || !rc.who.ownOnly() {
		return nil
	}
	var ids []string
	if v, ok := rc.params["id"]; ok {
		session := true
		for _, p := range notSessionIDs {
			session = session && !strings.HasPrefix(rc.route.pattern, p)
		}
		if session {
			ids = append(ids, v)
		}
	}
	if v, ok := queryFirst(rc.r, "session_id"); ok {
		ids = append(ids, v)
	}
	for _, v := range ids {
		id, err := uuid.Parse(v)
		if err != nil || id == uuid.Nil {
			continue
		}
		sess, err := s.ledger().Session(rc.r.Context(), id)
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		// An agent token limited to its own sessions must not read,
		// append to, submit intents to or seal a session another token
		// created (issue 13: an agent token could seal any session).
		if sess.CreatedBy != rc.who.hash {
			return errf(http.StatusForbidden, "this token has scope own_sessions: it reaches only the sessions it created, and session %s is not one of them", id)
		}
	}
	return nil
}

// ownsSession reports whether a caller may see a session's events on the
// global stream; cache keeps the answers of one stream.
func (s *Server) ownsSession(rc *reqCtx, id uuid.UUID, cache map[uuid.UUID]bool) bool {
	if rc.who == nil || !rc.who.ownOnly() {
		return true
	}
	if id == uuid.Nil {
		return false
	}
	if v, ok := cache[id]; ok {
		return v
	}
	sess, err := s.ledger().Session(rc.r.Context(), id)
	if err != nil {
		// Not known (yet) or not readable now: withheld, and asked again
		// for the next event.
		return false
	}
	own := sess.CreatedBy == rc.who.hash
	if len(cache) > 10000 {
		clear(cache)
	}
	cache[id] = own
	return own
}
