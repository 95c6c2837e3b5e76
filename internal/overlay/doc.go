// Package overlay keeps the per-session overlay layers of writable
// workspaces, computes what each step changed, and applies the changes
// to the real workspace when someone approves them.
//
// A command of a session in overlay mode sees the workspace through
// overlayfs: the real directory is the lowest, read-only layer, the
// session's accepted step layers are stacked above it, and the command
// writes into a fresh layer of its own. Nothing reaches the real files
// until Apply. The package reports data (change sets, apply results);
// the caller records them in the ledger as workspace_diff and
// workspace_applied events. It knows nothing of the ledger, the sandbox
// tiers or the server.
//
// # Layers
//
// A Store keeps root/<session>/<step>/{upper,work}, all mode 0700.
// Begin creates the step's empty layer and gives the sandbox its
// sandbox.Overlay; after the command, Changes computes the change set
// and the caller calls Accept (the layer joins the stack) or Discard
// (for example when the change set touches a forbidden path). A layer
// is part of the stack only once its "accepted" marker exists, written
// by rename, so a crash between Begin and Accept leaves a layer the next
// Begin discards.
//
//	p, err := store.Begin(session, step)
//	err = p.InheritRoot(workspace) // the merged root shows the upper dir's owner and mode
//	res := run(sandbox.Request{..., Overlay: p.Overlay()})
//	cs, err := p.Changes(workspace, overlay.DefaultLimits())
//	if bad, _ := overlay.Match(cs, forbidden); len(bad) > 0 { p.Discard() } else { p.Accept() }
//
// # Change sets
//
// Compute reads the layer directories, not a mount: it resolves the
// merged view as overlayfs does (whiteouts as a character device 0/0 or
// a zero-size file with the trusted./user.overlay.whiteout xattr; opaque
// directories with overlay.opaque=y in either namespace) and compares
// the stack with and without the layer, only at the paths the layer
// holds and under the directories it deletes or makes opaque. Each
// Change carries the path, the operation (added, modified, deleted,
// renamed, mode), kinds, modes, symlink targets, the SHA-256 of the new
// content and of the content below, and for text a unified diff from a
// bounded Myers line diff (64 KiB per file and 1 MiB per change set by
// default; truncation is marked). A deletion and an addition of the same
// kind and content in one change set become one rename. Changes are
// sorted by path so the same layer always gives the same JSON.
//
// # Apply
//
// Apply trusts neither the layers nor the host. It recomputes every
// layer and refuses (ErrTampered) when the states a layer leaves differ
// from the recorded change set; it compares each real file with the
// recorded base and refuses (ErrConflict) when the host changed it or
// created a path the session adds. Both refusals name the files. It then
// stages every new file beside its target, checks the copy's hash,
// renames it into place, removes deleted entries and sets modes; any
// failure undoes what was done, newest first. It refuses setuid and
// setgid bits (ErrUnsafe). After applying through a step, DropThrough
// removes the applied layers so the later ones can be applied in turn.
//
// # Limitations
//
//   - Layers made with redirect_dir=on or metacopy=on are refused
//     (ErrUnsupported): mount with redirect_dir=off,metacopy=off, so a
//     renamed directory is a copy and a deletion (mv's EXDEV fallback).
//   - Directory renames are reported as a directory added and one
//     deleted, with the files inside paired as renames.
//   - Apply is atomic per file, not for the whole set: another process
//     reading the workspace meanwhile may see a partial state, and a
//     crash in the middle leaves the staged and backup files
//     (.ironvise-*.tmp, .ironvise-*.bak) beside their targets.
//   - Parents are checked to be real directories before writing, but
//     not with openat2 RESOLVE_BENEATH: a host process racing Apply to
//     swap a directory for a symlink is not prevented.
//   - Ownership, timestamps, xattrs and hard links are not part of a
//     change set; applied files belong to the user running Apply.
//   - One Begin at a time per session is enforced within a process (and
//     by the exclusive creation of the step directory across processes).
//   - Reading layers is Linux-only; elsewhere Compute and Apply return
//     ErrUnsupported.
package overlay
