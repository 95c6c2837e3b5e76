package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

type tokenRow struct {
	TokenHash string  `json:"token_hash"`
	Role      string  `json:"role"`
	Label     *string `json:"label"`
	CreatedAt string  `json:"created_at"`
	ExpiresAt *string `json:"expires_at"`
	// Scope is "all" or "own_sessions" (scope.go).
	Scope string `json:"scope"`
}

// handleListTokens is route 37: hashes only, never a token.
func (s *Server) handleListTokens(rc *reqCtx) {
	list, err := s.ledger().Tokens(rc.r.Context())
	if err != nil {
		rc.fail(err)
		return
	}
	out := make([]tokenRow, 0, len(list))
	for _, t := range list {
		out = append(out, tokenRow{TokenHash: t.Hash, Role: t.Role, Label: optStr(t.Label), CreatedAt: ts(t.CreatedAt), ExpiresAt: optTS(t.ExpiresAt), Scope: scopeOr(t.Scope)})
	}
	rc.writeJSON(http.StatusOK, out)
}

// handleCreateToken is route 38: the token is shown once, in this answer.
func (s *Server) handleCreateToken(rc *reqCtx) {
	o, err := rc.bodyObject()
	if err != nil {
		rc.fail(err)
		return
	}
	role, _, e1 := o.str("role", true)
	label, hasLabel, e2 := o.str("label", false)
	days, hasDays, e3 := o.integer("expires_in_days")
	scope, hasScope, e4 := o.str("scope", false)
	if err := firstAPIError(e1, e2, e3, e4); err != nil {
		rc.fail(err)
		return
	}
	switch {
	case !hasScope:
		scope = ledger.ScopeAll
	case scope != ledger.ScopeAll && scope != ledger.ScopeOwnSessions:
		rc.fail(errf(http.StatusUnprocessableEntity, "scope %q is unknown (accepted: all, own_sessions)", scope))
		return
	case scope == ledger.ScopeOwnSessions && role != RoleAgent:
		// An admin token manages tokens and an auditor's only reads;
		// neither creates sessions to own.
		rc.fail(errf(http.StatusUnprocessableEntity, "scope own_sessions applies to agent tokens only (role %q)", role))
		return
	}
	switch role {
	case RoleAdmin, RoleAuditor, RoleAgent:
	default:
		rc.fail(errf(http.StatusBadRequest, "role %q is unknown (accepted: admin, auditor, agent)", role))
		return
	}
	if hasDays && (days < 1 || days > 3650) {
		rc.fail(errf(http.StatusBadRequest, "expires_in_days %d: must be from 1 to 3650", days))
		return
	}
	if len(label) > 200 || strings.ContainsAny(label, "\x00\n\r") {
		rc.fail(errf(http.StatusBadRequest, "label must be at most 200 characters on one line"))
		return
	}
	tok, err := newToken()
	if err != nil {
		rc.fail(err)
		return
	}
	row := ledger.Token{Hash: TokenHash(tok), Role: role, Label: label, Scope: scope}
	if hasDays {
		row.ExpiresAt = time.Now().UTC().Add(time.Duration(days) * 24 * time.Hour).Truncate(time.Microsecond)
	}
	if err := s.audited(rc, "token", "create", &row.Hash).PutToken(rc.r.Context(), row); err != nil {
		rc.fail(err)
		return
	}
	var lab *string
	if hasLabel {
		lab = &label
	}
	rc.writeJSON(http.StatusOK, map[string]any{"token": tok, "token_hash": row.Hash, "role": role, "label": lab, "expires_at": optTS(row.ExpiresAt), "scope": scope})
}

// scopeOr returns a stored scope, "" read as all.
func scopeOr(s string) string {
	if s == "" {
		return ledger.ScopeAll
	}
	return s
}

// handleDeleteToken is route 39; the token fails at once here and within
// tokenCacheTTL on other instances.
func (s *Server) handleDeleteToken(rc *reqCtx) {
	h := rc.params["hash"]
	if _, err := ledger.ParseHash(h); err != nil || len(h) != 64 {
		rc.fail(errf(http.StatusBadRequest, "token hash %q is not 64 hex digits", h))
		return
	}
	h = strings.ToLower(h)
	err := s.audited(rc, "token", "delete", &h).DeleteToken(rc.r.Context(), h)
	if errors.Is(err, ledger.ErrNotFound) {
		rc.fail(errf(http.StatusNotFound, "no token with hash %s", h))
		return
	}
	if err != nil {
		rc.fail(err)
		return
	}
	s.tokens.forget(h)
	rc.noContent()
}
