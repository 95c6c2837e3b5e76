package ledger

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// RememberedCheckpointPath is where a ledger with a data directory keeps
// the newest checkpoint it wrote, beside the issuer key and outside the
// database, so that a database restored from an older copy (or replaced
// by a fork) is noticed at startup (docs/ledger.md#rollback-and-forks).
func RememberedCheckpointPath(dataDir string) string {
	return filepath.Join(dataDir, "keys", "checkpoint.last")
}

// ParseCheckpointNote opens a signed checkpoint note (what `ironvise
// checkpoint latest` writes): it must be signed by pub under origin. It
// needs no database.
func ParseCheckpointNote(text []byte, origin string, pub ed25519.PublicKey) (Checkpoint, error) {
	v, err := noteVerifier(origin, pub)
	if err != nil {
		return Checkpoint{}, err
	}
	n, err := note.Open(text, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ledger: checkpoint note: not signed by issuer key %s for origin %s: %w", KeyID(pub), origin, err)
	}
	o, size, root, err := ParseCheckpointBody(n.Text)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ledger: checkpoint note: %w", err)
	}
	if o != origin {
		return Checkpoint{}, fmt.Errorf("ledger: checkpoint note: origin %q, want %q", o, origin)
	}
	sig, err := noteSignature(text)
	if err != nil {
		return Checkpoint{}, err
	}
	return Checkpoint{TreeSize: size, Root: root, PublicKey: pub, Signature: sig, Note: text, KeyID: fmt.Sprintf("%08x", v.KeyHash())}, nil
}

// rememberCheckpoint writes cp's note to the remembered-checkpoint file
// (temporary file, fsync unless Options.CheckpointFileUnsynced, rename).
// l.cpFile must be set.
func (l *Ledger) rememberCheckpoint(cp Checkpoint) error {
	if bytes.Equal(cp.Note, l.cpNote) {
		// The file already holds this note (read at startup, or written
		// last): rewriting it would cost an fsync and change nothing.
		return nil
	}
	if l.beforeRemember != nil {
		l.beforeRemember()
	}
	dir := filepath.Dir(l.cpFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("ledger: remember checkpoint %d: %w", cp.TreeSize, err)
	}
	if err := writeReplacing(l.cpFile, cp.Note, l.cpSync); err != nil {
		return fmt.Errorf("ledger: remember checkpoint %d in %s: %w", cp.TreeSize, l.cpFile, err)
	}
	l.cpNote = cp.Note
	return nil
}

// checkRemembered refuses a database whose log is older than, or not an
// extension of, the checkpoint remembered beside the keys: a database
// restored from an older copy would otherwise silently drop sessions, and
// a forked copy would sign a second history under the same key. New then
// brings the file up to the database's newest checkpoint.
func (l *Ledger) checkRemembered(ctx context.Context) error {
	text, err := os.ReadFile(l.cpFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ledger: read the remembered checkpoint: %w", err)
	}
	if len(text) == 0 {
		// What a power cut can leave of a file written without an fsync
		// (Options.CheckpointFileUnsynced) on a file system that does not
		// order the rename after the data. It is taken as no file: a
		// missing file is accepted too (a new data directory has none),
		// so an empty one lets nobody past the check who could not
		// delete it. New writes the newest checkpoint to it again.
		l.log.Warn("the remembered checkpoint is empty (a power cut before it reached the disk?); checking the database against none this time", "file", l.cpFile)
		return nil
	}
	rem, err := ParseCheckpointNote(text, l.origin, l.issuerPub)
	if err != nil {
		return fmt.Errorf("%w: %s: %w (it is written by IronVise only; restore it from a backup of the data directory)", ErrRolledBack, l.cpFile, err)
	}
	err = l.b.View(ctx, func(tx ReadTx) error {
		size, err := tx.LogSize(ctx)
		if err != nil {
			return err
		}
		if size < rem.TreeSize {
			return fmt.Errorf("%w: the database's log has %d entries, but this instance already signed checkpoint %d (remembered in %s): the database was restored from an older copy or replaced. Restore the newest backup of the database; if the rollback was deliberate, move %s away to accept the database as it is (the lost sessions stay lost)",
				ErrRolledBack, size, rem.TreeSize, l.cpFile, l.cpFile)
		}
		root, err := tlog.TreeHash(rem.TreeSize, &txHashReader{ctx: ctx, tx: tx})
		if err != nil {
			return fmt.Errorf("tree hash of size %d: %w", rem.TreeSize, err)
		}
		if Hash(root) != rem.Root {
			return fmt.Errorf("%w: the database's log at size %d has root %s, but this instance signed root %s for that size (remembered in %s): the database is a different history (a fork or a rewritten copy). Restore the database this instance wrote; move %s away only after investigating",
				ErrRolledBack, rem.TreeSize, Hash(root), rem.Root, l.cpFile, l.cpFile)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	l.cpNote = text
	return nil
}

// rememberLatest writes the database's newest checkpoint to the file.
func (l *Ledger) rememberLatest(ctx context.Context) error {
	cp, err := l.LatestCheckpoint(ctx)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return l.rememberCheckpoint(cp)
}
