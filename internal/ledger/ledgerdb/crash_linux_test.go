package ledgerdb

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// The crash test (issue acceptance 3): a child process appends in a loop
// and reports every acknowledged write on a pipe; the parent kills it with
// SIGKILL at random moments, then opens the ledger the way a restarted
// IronVise does (Open, Recover, VerifyStartup) and checks that every
// acknowledged write is there, unchanged, and that everything verifies.

// crashChildEnv, when set, makes the test binary the appending child; its
// value is the child's crashSpec as JSON.
const crashChildEnv = "IRONVISE_LEDGER_CRASH_CHILD"

const (
	// crashSeed fixes the kill moments; it is printed with the results.
	crashSeed uint64 = 0xc4a5_0000_0009
	// crashRounds is the number of kill -9s per backend; every
	// crashEarlyEvery-th comes at a random moment after the child started
	// (maybe while it opens the ledger), the others at a random moment
	// after its first acknowledged append, so at least 20 hit appends.
	crashRounds     = 26
	crashEarlyEvery = 6
)

type crashSpec struct {
	URL string `json:"url"`
	Dir string `json:"dir"`
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		os.Exit(crashChild(spec))
	}
	if spec := os.Getenv(exitChildEnv); spec != "" {
		os.Exit(exitChild(spec))
	}
	os.Exit(m.Run())
}

// crashChild appends until it is killed. Three writers each run a session:
// single appends, small batches, a key rotation every 40 events and a seal
// (then a new session) every 150; a short checkpoint cadence and lease
// renewal keep those writes happening too. Each acknowledged write is one
// line on fd 3, written with one write(2) (atomic on a pipe):
//
//	S <session>                  session created (seq 0 and 1 committed)
//	A <session> <seq> <hash>     event committed
//	E <session> <seq> <hash>     session sealed by that event
func crashChild(specJSON string) int {
	var spec crashSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "crash child: bad spec:", err)
		return 2
	}
	acks := os.NewFile(3, "acks")
	ctx := context.Background()
	l, err := Open(ctx, spec.URL, 4, ledger.Options{
		DataDir: spec.Dir, CheckpointEvents: 50, CheckpointInterval: 25 * time.Millisecond,
		LeaseRenewInterval: 20 * time.Millisecond,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child: open:", err)
		return 2
	}
	say := func(format string, args ...any) {
		if _, err := acks.Write(fmt.Appendf(nil, format+"\n", args...)); err != nil {
			os.Exit(3) // the parent is gone
		}
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: fmt.Sprintf("crash writer %d", w)})
				if err != nil {
					fail(err)
				}
				say("S %s", s.ID)
				for i := 1; i <= 150; i++ {
					var evs []ledger.Event
					switch {
					case i%40 == 0:
						ev, err := l.RotateKey(ctx, s.ID)
						if err != nil {
							fail(err)
						}
						evs = []ledger.Event{ev}
					case i%7 == 0:
						recs := make([]ledger.Record, 3)
						for k := range recs {
							recs[k] = ledger.Record{Type: ledger.TypeThought, Payload: map[string]any{"content": fmt.Sprintf("w%d batch %d.%d", w, i, k)}}
						}
						if evs, err = l.AppendBatch(ctx, s.ID, recs); err != nil {
							fail(err)
						}
					default:
						ev, err := l.Append(ctx, s.ID, ledger.TypeObservation, map[string]any{"content": fmt.Sprintf("w%d append %d", w, i)})
						if err != nil {
							fail(err)
						}
						evs = []ledger.Event{ev}
					}
					for _, ev := range evs {
						say("A %s %d %s", s.ID, ev.Seq, ev.Hash)
					}
				}
				sr, err := l.Seal(ctx, s.ID, "crash-child")
				if err != nil {
					fail(err)
				}
				say("E %s %d %s", s.ID, sr.Event.Seq, sr.Event.Hash)
			}
		}()
	}
	wg.Wait()
	return 0
}

// crashAck is one acknowledged event.
type crashAck struct {
	id   uuid.UUID
	seq  uint64
	hash ledger.Hash
}

// crashState is everything the children acknowledged so far.
type crashState struct {
	acks    []crashAck
	created map[uuid.UUID]bool
	sealed  map[uuid.UUID]bool
}

func (st *crashState) parse(line string) error {
	f := strings.Fields(line)
	if len(f) == 0 {
		return errors.New("empty line")
	}
	id, err := uuid.Parse(f[min(1, len(f)-1)])
	if err != nil {
		return err
	}
	switch {
	case f[0] == "S" && len(f) == 2:
		st.created[id] = true
		return nil
	case (f[0] == "A" || f[0] == "E") && len(f) == 4:
		seq, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return err
		}
		h, err := ledger.ParseHash(f[3])
		if err != nil {
			return err
		}
		st.acks = append(st.acks, crashAck{id, seq, h})
		if f[0] == "E" {
			st.sealed[id] = true
		}
		return nil
	}
	return fmt.Errorf("unknown line %q", line)
}

func TestCrashKill9(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		runCrash(t, "sqlite://"+filepath.Join(dir, "ledger.db"), dir)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		runCrash(t, crashPostgresURL(t), t.TempDir())
	})
}

// crashPostgresURL returns a fresh schema on the test server, or skips.
func crashPostgresURL(t *testing.T) string {
	url, _ := ledgertest.PostgresSchema(t, "ivcrash", "the PostgreSQL crash test")
	return url
}

func runCrash(t *testing.T, url, dir string) {
	ctx := context.Background()
	// The first start creates the schema, the issuer key and the instance
	// genesis, as `ironvise` does on a fresh machine.
	l, err := Open(ctx, url, 4, ledger.Options{DataDir: dir, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(crashSpec{URL: url, Dir: dir})
	rng := mrand.New(mrand.NewPCG(crashSeed, 0))
	st := &crashState{created: map[uuid.UUID]bool{}, sealed: map[uuid.UUID]bool{}}
	// The restarted process's clock runs a minute ahead, so the dead
	// child's 30 s leases have lapsed and Recover takes its sessions.
	late := func() time.Time { return time.Now().Add(time.Minute) }
	start := time.Now()
	// Kills that came after the child acknowledged writes, i.e. while it
	// was appending.
	var killedMidAppend int
	for round := range crashRounds {
		before := len(st.acks)
		n, err := crashRound(t, exe, spec, rng, st, round%crashEarlyEvery == crashEarlyEvery-1)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if n > 0 {
			killedMidAppend++
		}
		l, err := Open(ctx, url, 4, ledger.Options{DataDir: dir, CheckpointInterval: -1, Clock: late})
		if err != nil {
			t.Fatalf("round %d: open after kill -9: %v", round, err)
		}
		if _, err := l.Recover(ctx); err != nil {
			t.Fatalf("round %d: recover: %v", round, err)
		}
		rep, err := l.VerifyStartup(ctx)
		if err == nil {
			err = rep.Err()
		}
		if err != nil {
			t.Fatalf("round %d: startup verification: %v", round, err)
		}
		checkAcks(t, ctx, l, st.acks[before:], fmt.Sprintf("round %d", round))
		// Every session the child created is ended (recovered) or sealed,
		// and verifies with everything covered.
		if _, err := l.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		for id := range st.created {
			s, err := l.Session(ctx, id)
			if err != nil {
				t.Fatalf("round %d: acknowledged session %s: %v", round, id, err)
			}
			if s.Status == ledger.StatusRunning || (st.sealed[id] && !s.Sealed()) {
				t.Fatalf("round %d: session %s is %s (sealed %v) after recovery", round, id, s.Status, s.Sealed())
			}
			r, err := l.VerifySession(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if name, c, failed := r.FirstFailure(); failed || r.Uncovered != 0 {
				t.Fatalf("round %d: session %s: %s check at seq %d: %s (uncovered %d)", round, id, name, c.Seq, c.Problem, r.Uncovered)
			}
		}
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
		clear(st.created)
	}
	// A last restart checks everything, every acknowledged write of every
	// round included.
	l, err = Open(ctx, url, 4, ledger.Options{DataDir: dir, CheckpointInterval: -1, Clock: late})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	full, err := l.VerifyFull(ctx)
	if err != nil || !full.OK() {
		t.Fatalf("full verification after %d kills: %v, %v", crashRounds, full.Problems, err)
	}
	checkAcks(t, ctx, l, st.acks, "at the end")
	t.Logf("seed %#x: %d kill -9s in %v (%d while appends were being acknowledged), %d acknowledged events all present, %d chains verified",
		crashSeed, crashRounds, time.Since(start).Round(time.Millisecond), killedMidAppend, len(st.acks), full.SessionsChecked)
	// A test whose child never got to append proves nothing. Every round
	// but the early ones kills after the child's first acknowledged write,
	// so those always count; how many writes land before a kill depends on
	// the machine's load (a busy 2-core CI host acknowledges a few per
	// round), so the floor is one acknowledged write per round, not a rate.
	if killedMidAppend < crashRounds-crashRounds/crashEarlyEvery || len(st.acks) < crashRounds {
		t.Fatalf("only %d of %d kills came while appending (%d acknowledged events); the child is too slow to start", killedMidAppend, crashRounds, len(st.acks))
	}
}

// crashRound runs one child and kills it at a random moment after it
// started (early) or after its first acknowledged write. It returns how
// many writes the child acknowledged.
func crashRound(t *testing.T, exe string, spec []byte, rng *mrand.Rand, st *crashState, early bool) (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+string(spec))
	cmd.ExtraFiles = []*os.File{w}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		w.Close()
		return 0, err
	}
	w.Close()
	lines := make(chan string, 1024)
	readErr := make(chan error, 1)
	go func() {
		defer close(lines)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				// A line cut by the kill was never acknowledged.
				if errors.Is(err, io.EOF) {
					err = nil
				}
				readErr <- err
				return
			}
			lines <- strings.TrimSuffix(line, "\n")
		}
	}()
	var got []string
	afterFirst := !early
	delay := time.Duration(2+rng.IntN(250)) * time.Millisecond
	timer := time.NewTimer(delay)
	if afterFirst {
		timer.Stop()
	}
	wait := time.NewTimer(60 * time.Second)
	defer wait.Stop()
loop:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break loop // the child exited by itself
			}
			if afterFirst && len(got) == 0 {
				timer.Reset(delay)
			}
			got = append(got, line)
		case <-timer.C:
			break loop
		case <-wait.C:
			cmd.Process.Kill()
			cmd.Wait()
			return 0, fmt.Errorf("the child acknowledged nothing in 60 s:\n%s", out.String())
		}
	}
	cmd.Process.Kill()
	werr := cmd.Wait()
	for line := range lines {
		got = append(got, line)
	}
	if err := <-readErr; err != nil {
		return 0, err
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		return 0, fmt.Errorf("the child ended by itself (%v) before the kill:\n%s", werr, out.String())
	}
	if strings.Contains(out.String(), "DATA RACE") {
		t.Errorf("the child reported a data race:\n%s", out.String())
	}
	for _, line := range got {
		if err := st.parse(line); err != nil {
			return 0, fmt.Errorf("child line %q: %w", line, err)
		}
	}
	return len(got), nil
}

// checkAcks fails unless every acknowledged event is stored with the
// acknowledged hash.
func checkAcks(t *testing.T, ctx context.Context, l *ledger.Ledger, acks []crashAck, when string) {
	t.Helper()
	for _, a := range acks {
		evs, err := l.Events(ctx, a.id, a.seq, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Seq != a.seq {
			t.Fatalf("%s: acknowledged event %s seq %d is gone", when, a.id, a.seq)
		}
		if evs[0].Hash != a.hash {
			t.Fatalf("%s: event %s seq %d has hash %s; %s was acknowledged", when, a.id, a.seq, evs[0].Hash, a.hash)
		}
	}
}
