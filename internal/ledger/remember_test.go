package ledger_test

import (
	"context"
	"os"
	"runtime"
	"sync/atomic"
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
	got := rememberedCheckpoint(t, dir, l)
	if got.TreeSize < cp.TreeSize {
		t.Fatalf("remembered checkpoint %d after close; want at least %d", got.TreeSize, cp.TreeSize)
	}
}

// TestReleasedWaiterRunsFirst: the caller whose commit wrote a checkpoint
// runs before the remembered-checkpoint file is written, on one processor
// too. When the committing goroutine wrote the file itself after releasing
// its waiters, the released caller waited on that processor for the
// write's fsync (or for the runtime's monitor to hand the processor over:
// up to 10 ms on an idle process); an exec's reply waited with it. The old
// committer lost every round. The new one wins nearly all: the scheduler
// looks at its global queue first one time in 61, where the file's writer
// may be waiting after its last fsync, so three rounds in four must be
// won. The race detector randomizes which readied goroutine runs next, so
// under it the caller must win some rounds (each is about a coin toss;
// losing all 40 has odds of 2^-40).
func TestReleasedWaiterRunsFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx := context.Background()
	l, err := ledgerdb.Open(ctx, "", 0, ledger.Options{DataDir: t.TempDir(), CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	var returned atomic.Bool
	sawReturned := make(chan bool, 1)
	ledger.SetBeforeRemember(l, func() {
		// No blocking call here: the old committer ran straight on
		// into this, with the released caller still waiting for the
		// processor.
		sawReturned <- returned.Load()
	})
	const rounds = 40
	won := 0
	for range rounds {
		// A new event, so that the checkpoint is a new one to remember.
		if _, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "round"}); err != nil {
			t.Fatal(err)
		}
		returned.Store(false)
		if _, err := l.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		returned.Store(true)
		select {
		case ok := <-sawReturned:
			if ok {
				won++
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the remembered-checkpoint file was never written")
		}
	}
	want := rounds * 3 / 4
	if raceEnabled {
		want = 1
	}
	if won < want {
		t.Fatalf("the committing caller ran before the remembered-checkpoint file was written in %d of %d rounds; want at least %d", won, rounds, want)
	}
}

// TestRememberedCheckpointGathered: with a delay, checkpoints committed
// within it are remembered by one write of the newest (one fsync for
// several commits), and Close writes what was gathered without waiting
// for the delay to pass.
func TestRememberedCheckpointGathered(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const delay = time.Minute // longer than the test: only Close can end it
	l, err := ledgerdb.Open(ctx, "", 0, ledger.Options{DataDir: dir, CheckpointInterval: -1, CheckpointFileDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int32
	ledger.SetBeforeRemember(l, func() { writes.Add(1) })
	var last ledger.Checkpoint
	for range 3 {
		if _, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "gather"}); err != nil {
			t.Fatal(err)
		}
		if last, err = l.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // a writer without the delay would have written by now
	if n := writes.Load(); n != 0 {
		t.Fatalf("%d writes of the remembered checkpoint within the delay", n)
	}
	start := time.Now()
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > delay/2 {
		t.Fatalf("Close waited %v for the delay", waited)
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("%d writes of the remembered checkpoint for three checkpoints; want one", n)
	}
	got := rememberedCheckpoint(t, dir, l)
	if got.TreeSize != last.TreeSize {
		t.Fatalf("remembered checkpoint %d; want the newest, %d", got.TreeSize, last.TreeSize)
	}
}

// rememberedCheckpoint reads and checks the checkpoint l remembered in the
// data directory dir.
func rememberedCheckpoint(t *testing.T, dir string, l *ledger.Ledger) ledger.Checkpoint {
	t.Helper()
	text, err := os.ReadFile(ledger.RememberedCheckpointPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := ledger.ParseCheckpointNote(text, l.Origin(), l.IssuerPublicKey())
	if err != nil {
		t.Fatal(err)
	}
	return cp
}
