package ledgerdb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/sqlite"
)

// exitChildEnv, when set, makes the test binary a process that records one
// session the way a standalone exec does and exits; its value is the
// child's exitSpec as JSON.
const exitChildEnv = "IRONVISE_LEDGER_EXIT_CHILD"

type exitSpec struct {
	Dir string `json:"dir"`
	// OneCommand opens with OpenForOneCommand instead of OpenBeforeExit.
	OneCommand bool `json:"one_command"`
	// Bytes is the size of the session's one observation.
	Bytes int `json:"bytes"`
}

// exitChild opens the ledger of spec.Dir, records and seals a session,
// closes the ledger, prints the session's id and returns: the test binary
// then exits at once, as ironvise does after a command.
func exitChild(specJSON string) int {
	var spec exitSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "exit child: bad spec:", err)
		return 2
	}
	ctx := context.Background()
	open := OpenBeforeExit
	if spec.OneCommand {
		open = OpenForOneCommand
	}
	l, err := open(ctx, "", 1, ledger.Options{DataDir: spec.Dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "exit child: open:", err)
		return 2
	}
	err = func() error {
		s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "exit child"})
		if err != nil {
			return err
		}
		if _, err := l.Append(ctx, s.ID, ledger.TypeObservation, map[string]any{"content": strings.Repeat("o", spec.Bytes)}); err != nil {
			return err
		}
		if _, err := l.Seal(ctx, s.ID, "exit-child"); err != nil {
			return err
		}
		fmt.Println(s.ID)
		return nil
	}()
	if err = errors.Join(err, l.Close(ctx)); err != nil {
		fmt.Fprintln(os.Stderr, "exit child:", err)
		return 2
	}
	return 0
}

// runExitChild runs exitChild in a process of its own and returns the id
// of the session it recorded.
func runExitChild(t *testing.T, spec exitSpec) uuid.UUID {
	t.Helper()
	id, err := startExitChild(spec)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// startExitChild is runExitChild for any goroutine: it returns the error.
func startExitChild(spec exitSpec) (uuid.UUID, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return uuid.Nil, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), exitChildEnv+"="+string(raw))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return uuid.Nil, fmt.Errorf("exit child: %v\n%s", err, stderr.Bytes())
	}
	id, err := uuid.Parse(strings.TrimSpace(string(out)))
	if err != nil {
		return uuid.Nil, fmt.Errorf("exit child printed %q: %v", out, err)
	}
	return id, nil
}

// walSize is the size of the WAL beside dir's ledger.db, -1 when there is
// none.
func walSize(t *testing.T, dir string) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, "ledger.db-wal"))
	if errors.Is(err, os.ErrNotExist) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// verifySessions opens the ledger of dir as serve would and checks that
// every session in ids is there and verifies.
func verifySessions(t *testing.T, dir string, ids ...uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	l, err := Open(ctx, "", 1, ledger.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	for _, id := range ids {
		rep, err := l.VerifySession(ctx, id)
		if err != nil {
			t.Fatalf("session %s: %v", id, err)
		}
		if !rep.OK() {
			name, c, _ := rep.FirstFailure()
			t.Fatalf("session %s: check %s failed: %+v", id, name, c)
		}
		if !rep.Sealed || rep.EventCount < 3 {
			t.Fatalf("session %s: sealed %v with %d events; want the sealed session the child recorded", id, rep.Sealed, rep.EventCount)
		}
	}
}

// copyDataDir copies the ledger's files as a process that exited left
// them: what the next process to open them finds.
func copyDataDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range []string{"ledger.db", "ledger.db-wal", "keys/issuer.ed25519", "keys/checkpoint.last"} {
		src, err := os.Open(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(to, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		dst, err := os.OpenFile(filepath.Join(to, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(dst, src)
		src.Close()
		if err = errors.Join(err, dst.Close()); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// TestOpenBeforeExitLeavesASmallWAL: a process that records a session
// with OpenBeforeExit and exits leaves the commits in the WAL instead of
// checkpointing them on close (two fsyncs, and the next process's sync of
// a fresh WAL header); the next process finds every one of them. A WAL
// grown past sqlite.WALKeepBytes is checkpointed on close as before.
func TestOpenBeforeExitLeavesASmallWAL(t *testing.T) {
	dir := t.TempDir()
	first := runExitChild(t, exitSpec{Dir: dir, Bytes: 1000})
	if n := walSize(t, dir); n <= 0 || n > sqlite.WALKeepBytes {
		t.Fatalf("after a process recorded a session with OpenBeforeExit the WAL is %d bytes; want it left, 1–%d bytes", n, sqlite.WALKeepBytes)
	}
	// What that process left is all the next one needs.
	verifySessions(t, copyDataDir(t, dir), first)
	second := runExitChild(t, exitSpec{Dir: dir, Bytes: 1000})
	// A session whose observation alone is over the bound.
	third := runExitChild(t, exitSpec{Dir: dir, Bytes: sqlite.WALKeepBytes})
	if n := walSize(t, dir); n != -1 {
		t.Fatalf("after the WAL grew past %d bytes it is still there (%d bytes); want it checkpointed and removed on close", sqlite.WALKeepBytes, n)
	}
	verifySessions(t, dir, first, second, third)
}

// TestOpenForOneCommandCheckpoints: without OpenBeforeExit a one-command
// process checkpoints on close, so the database file holds everything.
func TestOpenForOneCommandCheckpoints(t *testing.T) {
	dir := t.TempDir()
	id := runExitChild(t, exitSpec{Dir: dir, OneCommand: true, Bytes: 1000})
	if n := walSize(t, dir); n != -1 {
		t.Fatalf("after a process recorded a session with OpenForOneCommand the WAL is %d bytes; want it checkpointed and removed", n)
	}
	verifySessions(t, dir, id)
}

// TestOpenBeforeExitConcurrentProcesses: agents run tool calls in parallel,
// so hooks and standalone execs open the ledger at once, each leaving the
// WAL to whoever comes next. Every session any of them recorded is there
// and verifies, and the WAL stays bounded by SQLite's own checkpoint.
func TestOpenBeforeExitConcurrentProcesses(t *testing.T) {
	dir := t.TempDir()
	// The first creates the keys, which concurrent first runs would race for.
	ids := []uuid.UUID{runExitChild(t, exitSpec{Dir: dir, Bytes: 1000})}
	const procs, rounds = 6, 4
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				id, err := startExitChild(exitSpec{Dir: dir, Bytes: 20_000 * (1 + (p+r)%3)})
				mu.Lock()
				ids, errs = append(ids, id), append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := walSize(t, dir); n > 8<<20 {
		t.Fatalf("the WAL grew to %d bytes; want it bounded by SQLite's automatic checkpoint", n)
	}
	verifySessions(t, dir, ids...)
}
