package ledger_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
)

// TestRememberedCheckpointOffTheCommit: a commit that writes a checkpoint
// returns before the remembered-checkpoint file is written (its write and
// fsync are not on the latency of an exec's reply), and the file holds the
// checkpoint once the ledger is closed.
func TestRememberedCheckpointOffTheCommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := ledgerdb.Open(ctx, "", 0, ledger.Options{DataDir: dir, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	writing := make(chan struct{}, 1)
	ledger.SetBeforeRemember(l, func() {
		select {
		case writing <- struct{}{}:
		default:
		}
		<-release
	})
	if _, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "remember"}); err != nil {
		t.Fatal(err)
	}
	committed := make(chan ledger.Checkpoint, 1)
	go func() {
		cp, err := l.Checkpoint(ctx)
		if err != nil {
			t.Error(err)
		}
		committed <- cp
	}()
	var cp ledger.Checkpoint
	select {
	case cp = <-committed:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the checkpoint's commit waited for the remembered-checkpoint file")
	}
	select {
	case <-writing:
	case <-time.After(10 * time.Second):
		t.Fatal("the remembered-checkpoint file was never written")
	}
	close(release)
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(ledger.RememberedCheckpointPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ledger.ParseCheckpointNote(text, l.Origin(), l.IssuerPublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if got.TreeSize < cp.TreeSize {
		t.Fatalf("remembered checkpoint %d after close; want at least %d", got.TreeSize, cp.TreeSize)
	}
}
