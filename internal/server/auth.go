package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Token roles (docs/design/api.md#authentication).
const (
	RoleAdmin   = "admin"
	RoleAuditor = "auditor"
	RoleAgent   = "agent"
)

// Labels of bootstrapped tokens (docs/design/api.md#token-bootstrap).
const (
	labelObserver  = "observer_token (bootstrapped)"
	labelGenerated = "generated (this run)"
	labelEnv       = "env (bootstrapped)"
)

// tokenCacheTTL bounds how stale a cached token may be: a token deleted on
// another instance fails here within this time
// (docs/design/api.md#authentication).
const tokenCacheTTL = time.Second

// principal is an authenticated caller.
type principal struct {
	hash    string
	role    string
	label   string
	expires time.Time
	// scope is ledger.ScopeAll or ledger.ScopeOwnSessions (scope.go).
	scope string
}

// ownOnly reports whether the caller reaches only the sessions it created.
func (p *principal) ownOnly() bool { return p.scope == ledger.ScopeOwnSessions }

// may reports whether the caller's role grants a route's access.
func (p *principal) may(a access) bool {
	switch a {
	case public, anyRole:
		return p.role == RoleAdmin || p.role == RoleAgent || p.role == RoleAuditor
	case writeRole:
		return p.role == RoleAdmin || p.role == RoleAgent
	case adminRole:
		return p.role == RoleAdmin
	}
	return false
}

// actor is what admin_change and session_sealed record about the caller:
// the first 16 hex characters of the token hash, never the token.
func (p *principal) actor() string { return p.hash[:16] }

// decidedBy is the decided_by of an approval posted by this caller.
func (p *principal) decidedBy() string { return "operator:api:" + p.label }

// TokenHash is the lookup key of a token: the lowercase hex SHA-256 of its
// UTF-8 bytes. Only this is ever stored.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// newToken returns 32 random bytes, hex-encoded (64 characters).
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("server: generate token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// tokenFrom returns the request's token: the Authorization bearer token,
// else the token query parameter.
func tokenFrom(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, tok, ok := strings.Cut(strings.TrimSpace(a), " ")
		if ok && strings.EqualFold(scheme, "bearer") {
			if tok = strings.TrimSpace(tok); tok != "" {
				return tok
			}
		}
	}
	if v, ok := r.URL.Query()["token"]; ok && len(v) > 0 {
		return v[0]
	}
	return ""
}

// tokenCache keeps looked-up tokens for at most tokenCacheTTL.
type tokenCache struct {
	mu sync.Mutex
	m  map[string]cachedToken // guarded by mu
}

type cachedToken struct {
	p  principal
	at time.Time
}

func (c *tokenCache) get(hash string, now time.Time) (principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if !ok || now.Sub(e.at) > tokenCacheTTL {
		return principal{}, false
	}
	return e.p, true
}

func (c *tokenCache) put(p principal, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > 10000 {
		c.m = map[string]cachedToken{}
	}
	c.m[p.hash] = cachedToken{p: p, at: now}
}

// forget drops a token at once (delete on this instance).
func (c *tokenCache) forget(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, hash)
}

// authenticate resolves the request's token to a principal, or answers 401.
func (s *Server) authenticate(r *http.Request) (*principal, error) {
	tok := tokenFrom(r)
	if tok == "" {
		return nil, errf(http.StatusUnauthorized, "missing token: send Authorization: Bearer <token> or ?token=<token>")
	}
	p, err := s.lookupToken(r.Context(), TokenHash(tok))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// lookupToken finds a valid (known, unexpired) token by hash.
func (s *Server) lookupToken(ctx context.Context, hash string) (*principal, error) {
	now := time.Now()
	p, ok := s.tokens.get(hash, now)
	if !ok {
		t, err := s.ledger().Token(ctx, hash)
		if errors.Is(err, ledger.ErrNotFound) {
			return nil, errf(http.StatusUnauthorized, "invalid or expired token")
		}
		if err != nil {
			return nil, err
		}
		p = principal{hash: t.Hash, role: t.Role, label: t.Label, expires: t.ExpiresAt, scope: t.Scope}
		s.tokens.put(p, now)
	}
	// Expiry is compared as times: a token is valid only strictly before
	// its expires_at.
	if !p.expires.IsZero() && !now.Before(p.expires) {
		return nil, errf(http.StatusUnauthorized, "invalid or expired token")
	}
	return &p, nil
}

// bootstrapTokens stores the tokens of docs/design/api.md#token-bootstrap and
// returns the generated one-run admin token, if any ("" when OBSERVER_TOKEN
// is set).
func (s *Server) bootstrapTokens(ctx context.Context) (string, error) {
	l := s.ledger()
	// One-run tokens of an earlier process are never valid again.
	if _, err := l.DeleteTokensByLabel(ctx, labelGenerated); err != nil {
		return "", fmt.Errorf("server: delete leftover one-run tokens: %w", err)
	}
	sc := s.cfg.Server
	put := func(tok, role, label string) error {
		hash := TokenHash(tok)
		row := ledger.Token{Hash: hash, Role: role, Label: label}
		if old, err := l.Token(ctx, hash); err == nil {
			// A known token keeps its label and creation time; its role is
			// forced and its expiry cleared.
			row.Label, row.CreatedAt = old.Label, old.CreatedAt
		} else if !errors.Is(err, ledger.ErrNotFound) {
			return err
		}
		if err := l.PutToken(ctx, row); err != nil {
			return fmt.Errorf("server: store the %s token: %w", role, err)
		}
		return nil
	}
	if sc.AuditorToken.Set() {
		if err := put(sc.AuditorToken.Reveal(), RoleAuditor, labelEnv); err != nil {
			return "", err
		}
	}
	if sc.AgentToken.Set() {
		if err := put(sc.AgentToken.Reveal(), RoleAgent, labelEnv); err != nil {
			return "", err
		}
	}
	if sc.ObserverToken.Set() {
		if n := len(sc.ObserverToken.Reveal()); n < 32 {
			s.log.Warn("OBSERVER_TOKEN is shorter than 32 characters; use a long random value (for example: openssl rand -hex 32)", "length", n)
		}
		return "", put(sc.ObserverToken.Reveal(), RoleAdmin, labelObserver)
	}
	tok, err := newToken()
	if err != nil {
		return "", err
	}
	if err := l.PutToken(ctx, ledger.Token{Hash: TokenHash(tok), Role: RoleAdmin, Label: labelGenerated}); err != nil {
		return "", fmt.Errorf("server: store the generated admin token: %w", err)
	}
	return tok, nil
}
