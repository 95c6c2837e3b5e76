package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestWriterCommitsWithoutCheckpointing: a commit through a store that
// stays open never checkpoints the WAL itself, however large the WAL
// grows. SQLite's automatic checkpoint ran inside the commit that crossed
// 1,000 pages, and that commit's caller (an exec's reply) waited for it.
func TestWriterCommitsWithoutCheckpointing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB() // the writer
	if _, err := db.ExecContext(ctx, "CREATE TABLE probe (b BLOB)"); err != nil {
		t.Fatal(err)
	}
	before := fileSize(t, path)
	// 1,500 pages of new data, one commit each 50.
	for range 30 {
		if _, err := db.ExecContext(ctx, "INSERT INTO probe VALUES (randomblob(200000))"); err != nil {
			t.Fatal(err)
		}
	}
	if after := fileSize(t, path); after != before {
		t.Fatalf("the database file grew from %d to %d bytes during the writer's commits: a commit checkpointed the WAL", before, after)
	}
	if wal := fileSize(t, path+"-wal"); wal < 6<<20 {
		t.Fatalf("the WAL holds %d bytes; want the 6 MB written", wal)
	}
}

// TestCheckpointerCheckpointsInTheBackground: the store's own checkpointer
// copies the WAL into the database once enough commits came, while the
// store stays open (the writer does not, TestWriterCommitsWithoutCheckpointing).
func TestCheckpointerCheckpointsInTheBackground(t *testing.T) {
	old := checkpointCommits
	checkpointCommits = 5
	defer func() { checkpointCommits = old }()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := ledger.GenerateSigningKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(ctx, s, ledger.Options{IssuerKey: issuer, CheckpointInterval: -1, CheckpointFile: "-"})
	if err != nil {
		t.Fatal(err)
	}
	before := fileSize(t, path)
	for range 6 {
		sess, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "fill the WAL"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(ctx, sess.ID, ledger.TypeObservation, map[string]any{"content": strings.Repeat("x", 100_000)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for fileSize(t, path) <= before {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is still %d bytes 10 s after %d commits; want the checkpointer to have copied the WAL into it", before, s.WriteCommits())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
