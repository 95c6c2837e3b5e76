package ledgerdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestRollbackRefused is issue 23 item 2 (startup): the newest checkpoint
// is remembered beside the keys, so a ledger.db restored from an older
// copy, or replaced by a fork extended differently, is refused at startup.
func TestRollbackRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	open := func(dataDir string) (*ledger.Ledger, error) {
		return Open(ctx, "", 0, ledger.Options{DataDir: dataDir, CheckpointInterval: -1})
	}
	extend := func(dataDir, goal string) {
		t.Helper()
		l, err := open(dataDir)
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: goal})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Seal(ctx, s.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	extend(dir, "first")
	old := filepath.Join(t.TempDir(), "ledger.db.old")
	copyFile(db, old)
	// A fork: the same ledger and issuer key in another directory,
	// extended with another session.
	forkDir := t.TempDir()
	copyFile(db, filepath.Join(forkDir, "ledger.db"))
	os.MkdirAll(filepath.Join(forkDir, "keys"), 0o700)
	copyFile(ledger.IssuerKeyPath(dir), ledger.IssuerKeyPath(forkDir))
	extend(forkDir, "the fork's session")
	extend(forkDir, "the fork's second session")

	extend(dir, "second") // the original moves on
	for _, tc := range []struct{ name, from string }{
		{"older copy", old},
		{"fork", filepath.Join(forkDir, "ledger.db")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := filepath.Join(t.TempDir(), "good")
			copyFile(db, good)
			copyFile(tc.from, db)
			// The SQLite side files belong to the replaced database.
			os.Remove(db + "-wal")
			os.Remove(db + "-shm")
			l, err := open(dir)
			if !errors.Is(err, ledger.ErrRolledBack) {
				if l != nil {
					l.Close(ctx)
				}
				t.Fatalf("open with the %s: %v; want ErrRolledBack", tc.name, err)
			}
			copyFile(good, db)
			l, err = open(dir)
			if err != nil {
				t.Fatalf("open with the database restored: %v", err)
			}
			l.Close(ctx)
		})
	}
}

// TestOnCheckpoint: every committed checkpoint reaches OnCheckpoint with
// the instance-chain event that records it (what SIEM egress sends).
func TestOnCheckpoint(t *testing.T) {
	ctx := context.Background()
	var got []ledger.Event
	var cps []ledger.Checkpoint
	l, err := Open(ctx, "", 0, ledger.Options{DataDir: t.TempDir(), CheckpointInterval: -1,
		OnCheckpoint: func(cp ledger.Checkpoint, ev ledger.Event) { cps, got = append(cps, cp), append(got, ev) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Seal(ctx, s.ID, "t"); err != nil {
		t.Fatal(err)
	}
	latest, err := l.LatestCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := len(got)
	if n < 2 || got[n-1].Type != ledger.TypeCheckpoint || got[n-1].SessionID != ledger.InstanceSessionID || cps[n-1].TreeSize != latest.TreeSize {
		t.Fatalf("OnCheckpoint calls %d, last %+v / %+v; want the seal's checkpoint %d", n, got[n-1:], cps[n-1:], latest.TreeSize)
	}
}

// TestRememberedCheckpointWrittenUnsynced: a one-command process writes
// the remembered checkpoint without an fsync (CheckpointFileUnsynced), and
// it still holds the newest checkpoint. What a power cut can leave of such
// a write on some file systems, an empty file, is taken as no file (a
// missing one is accepted too) and rewritten; anything else in it that is
// not a checkpoint this instance signed is still refused.
func TestRememberedCheckpointWrittenUnsynced(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	anchor := ledger.RememberedCheckpointPath(dir)
	open := func() (*ledger.Ledger, error) {
		return OpenBeforeExit(ctx, "", 1, ledger.Options{DataDir: dir, CheckpointInterval: -1, CheckpointFileUnsynced: true})
	}
	newest := func(l *ledger.Ledger) ledger.Checkpoint {
		t.Helper()
		cp, err := l.LatestCheckpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	remembered := func(l *ledger.Ledger) int64 {
		t.Helper()
		text, err := os.ReadFile(anchor)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := ledger.ParseCheckpointNote(text, l.Origin(), l.IssuerPublicKey())
		if err != nil {
			t.Fatalf("the remembered checkpoint: %v", err)
		}
		return cp.TreeSize
	}
	l, err := open()
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "unsynced"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Seal(ctx, s.ID, "test"); err != nil {
		t.Fatal(err)
	}
	want := newest(l).TreeSize
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := remembered(l); got != want {
		t.Fatalf("remembered checkpoint %d after close; want the seal's %d", got, want)
	}

	if err := os.Truncate(anchor, 0); err != nil {
		t.Fatal(err)
	}
	l, err = open()
	if err != nil {
		t.Fatalf("open with an empty remembered checkpoint: %v; want it taken as none", err)
	}
	if got := remembered(l); got != newest(l).TreeSize {
		t.Fatalf("remembered checkpoint %d after open; want it rewritten with the newest, %d", got, newest(l).TreeSize)
	}
	text, err := os.ReadFile(anchor)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}

	for name, content := range map[string][]byte{
		"half a note": text[:len(text)/2],
		"one byte":    text[:1],
		"whitespace":  []byte("\n"),
	} {
		if err := os.WriteFile(anchor, content, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := open()
		if !errors.Is(err, ledger.ErrRolledBack) {
			if l != nil {
				l.Close(ctx)
			}
			t.Fatalf("open with %s in the remembered checkpoint: %v; want ErrRolledBack", name, err)
		}
	}
}
