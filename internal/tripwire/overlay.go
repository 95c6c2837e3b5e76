package tripwire

import (
	"fmt"
	"path/filepath"

	"github.com/ironvise/ironvise/internal/verdict"
)

// Overlay mode (ECTO_SANDBOX_WORKSPACE=overlay). A command sees the
// workspace through the session's overlay: its writes inside the
// workspace land in a layer, not in the real files, and are recorded and
// applied only on approval. So the tripwire allows redirections into the
// workspace there, as it allows them into writable_roots; the files that
// run code later (write.go, sensitiveWrite) and the protected paths stay
// refused, and writes outside the workspace stay refused as in ro mode.
//
// Scripts: the tripwire judges a script in the workspace as reviewed
// because it is the user's file. In overlay mode the command runs the
// overlay's version, which an earlier command of the session may have
// written; the tripwire cannot read that version (it reads the real
// workspace), so a file the session's layers hold, at the path or at any
// parent, is unreviewed code (a dynamic program), like a file in a
// writable root. Reading the layers instead would make the check depend on
// a union-mount resolution of its own; naming the file unreviewed is the
// conservative answer and costs only scripts the session itself wrote.

// OverlayChanged reports whether the session's overlay layers hold the
// absolute path p or one of its parents (an entry added, changed,
// replaced or deleted by an earlier command of the session).
type OverlayChanged func(p string) bool

// WithOverlay returns a copy of t for a session in overlay mode; changed
// answers for the session's layers. nil returns ro mode.
func (t *Tripwire) WithOverlay(changed OverlayChanged) *Tripwire {
	c := *t
	c.overlay = changed
	return &c
}

// Overlay reports whether t judges commands for overlay mode.
func (t *Tripwire) Overlay() bool { return t.overlay != nil }

// overlayWrite reports whether a redirection to resolved is a write into
// the workspace's overlay, and why it is refused when it is sensitive.
func (t *Tripwire) overlayWrite(v PathView) (inOverlay bool, p *Problem) {
	if t.overlay == nil || !t.inWorkspace(filepath.ToSlash(v.Resolved)) {
		return false, nil
	}
	for _, q := range []string{v.Lexical, v.Resolved} {
		if why := t.sensitiveWrite(q); why != "" {
			return true, &Problem{verdict.PathWriteSensitive, fmt.Sprintf("write to %s refused: %s", quote(v.Raw), why)}
		}
	}
	return true, nil
}

// overlayChanged reports whether the session's layers changed any of the
// paths.
func (t *Tripwire) overlayChanged(ps ...string) bool {
	if t.overlay == nil {
		return false
	}
	for _, p := range ps {
		if p != "" && t.overlay(p) {
			return true
		}
	}
	return false
}
