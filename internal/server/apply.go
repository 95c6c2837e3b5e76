package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ironvise/ironvise/internal/overlay"
	"github.com/ironvise/ironvise/internal/session"
)

// handleApply is POST /api/sessions/{id}/apply (admin): ironvise apply
// over the API (docs/cli.md#diff-and-apply). The body is
// {"dry_run": bool, "through": step}, both optional. A refusal (a
// conflict with the host, a layer changed behind IronVise's back, a
// setuid bit) or a session that does not verify is a 409 naming the
// files; a session that did not run in overlay mode is a 422.
func (s *Server) handleApply(rc *reqCtx) {
	o, err := rc.bodyObject()
	if err != nil {
		rc.fail(err)
		return
	}
	dryRun, _, e1 := o.boolean("dry_run", false)
	through, _, e2 := o.integer("through")
	if err := firstAPIError(e1, e2); err != nil {
		rc.fail(err)
		return
	}
	if through < 0 {
		rc.fail(errf(http.StatusUnprocessableEntity, "field \"through\" is a step number, 1 or more (0 or absent: all steps)"))
		return
	}
	id, _, err := s.pathSession(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	res, err := session.ApplyWorkspace(rc.r.Context(), s.ledger(), s.cfg.DataDir, id, through, dryRun, "operator:api:"+rc.who.label)
	var re *overlay.RefusalError
	switch {
	case errors.As(err, &re):
		var b strings.Builder
		fmt.Fprintf(&b, "apply refused, nothing was changed: %v", re.Kind)
		for _, p := range re.Problems {
			fmt.Fprintf(&b, "; %s: %s", p.Path, p.Reason)
		}
		rc.fail(errf(http.StatusConflict, "%s", b.String()))
		return
	case errors.Is(err, session.ErrUnverified):
		rc.fail(errf(http.StatusConflict, "%v", err))
		return
	case errors.Is(err, session.ErrNotOverlay):
		rc.fail(errf(http.StatusUnprocessableEntity, "%v", err))
		return
	case err != nil:
		rc.fail(err)
		return
	}
	rc.writeJSON(http.StatusOK, map[string]any{"ok": true, "session_id": id.String(), "result": res})
}
