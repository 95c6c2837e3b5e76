package ledgertest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// testConcurrentMixed is the concurrency acceptance: 16 sessions
// appended in parallel while 4 writers race on one more session, all
// released at once. Half the sessions and half the racing writers use a
// second Ledger on the same database, as a second process would. Every
// session must end dense (sequences 0..n-1, linked), with each
// acknowledged append stored exactly once under the hash it was
// acknowledged with, and verify.
func testConcurrentMixed(t *testing.T, h Harness) {
	e := open(t, h, nil)
	l2 := e.openLedger(nil)
	procs := [2]*ledger.Ledger{e.l, l2}
	const sessions, perSession = 16, 20
	const racers, perRacer = 4, 30
	ids := make([]uuid.UUID, sessions)
	for i := range ids {
		ids[i] = newSession(t, procs[i%2], fmt.Sprintf("parallel session %d", i)).ID
	}
	shared := newSession(t, e.l, "one session, four racing writers").ID

	type ack struct {
		ev      ledger.Event
		content string
	}
	acks := make([][]ack, sessions+racers)
	errs := make(chan error, sessions+racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range sessions + racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, id, n, name := procs[g%2], shared, perRacer, fmt.Sprintf("racer %d", g-sessions)
			if g < sessions {
				id, n, name = ids[g], perSession, fmt.Sprintf("session %d", g)
			}
			<-start
			for j := range n {
				content := fmt.Sprintf("%s append %d", name, j)
				ev, err := l.Append(ctx(), id, ledger.TypeObservation, map[string]any{"content": content})
				if err != nil {
					errs <- fmt.Errorf("%s: append %d: %w", name, j, err)
					return
				}
				// One writer's appends keep their order; a session's only
				// writer gets exactly the next sequence.
				if k := len(acks[g]); k > 0 && ev.Seq <= acks[g][k-1].ev.Seq {
					errs <- fmt.Errorf("%s: append %d got seq %d after %d", name, j, ev.Seq, acks[g][k-1].ev.Seq)
					return
				}
				if g < sessions && ev.Seq != uint64(j)+2 {
					errs <- fmt.Errorf("%s: append %d got seq %d; want %d", name, j, ev.Seq, j+2)
					return
				}
				acks[g] = append(acks[g], ack{ev, content})
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if _, err := e.l.Checkpoint(ctx()); err != nil {
		t.Fatal(err)
	}

	// What each session must hold besides its genesis and prompt: every
	// acknowledged append, once, at the sequence and hash acknowledged.
	want := map[uuid.UUID]map[uint64]ack{shared: {}}
	for g, as := range acks {
		id := shared
		if g < sessions {
			id = ids[g]
			want[id] = map[uint64]ack{}
		}
		for _, a := range as {
			if _, dup := want[id][a.ev.Seq]; dup {
				t.Fatalf("session %s: seq %d acknowledged twice", id, a.ev.Seq)
			}
			want[id][a.ev.Seq] = a
		}
	}
	for id, acked := range want {
		evs, err := l2.Events(ctx(), id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != len(acked)+2 {
			t.Errorf("session %s has %d events; want %d (2 + %d acknowledged appends)", id, len(evs), len(acked)+2, len(acked))
			continue
		}
		seen := map[string]bool{}
		for i, ev := range evs {
			if ev.Seq != uint64(i) || (i > 0 && ev.PrevHash != evs[i-1].Hash) {
				t.Errorf("session %s: event %d has seq %d: not dense and linked", id, i, ev.Seq)
				break
			}
			if i < 2 {
				continue
			}
			a, ok := acked[ev.Seq]
			if !ok || a.ev.Hash != ev.Hash {
				t.Errorf("session %s: seq %d is not the append acknowledged at that seq", id, ev.Seq)
				break
			}
			var p struct{ Content string }
			if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Content != a.content || seen[p.Content] {
				t.Errorf("session %s: seq %d holds %q; want %q once", id, ev.Seq, p.Content, a.content)
				break
			}
			seen[p.Content] = true
		}
		r := mustVerify(t, e.l, id)
		if r.Uncovered != 0 {
			t.Errorf("session %s: %d events not covered by the checkpoint written after the appends", id, r.Uncovered)
		}
	}
	// One gap-free log across both processes, each event once.
	evs, err := e.l.EventsByLog(ctx(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	type at struct {
		id  uuid.UUID
		seq uint64
	}
	logged := map[at]bool{}
	for i, ev := range evs {
		if ev.LogIndex != int64(i) {
			t.Fatalf("log index %d at position %d: the log has a gap", ev.LogIndex, i)
		}
		if logged[at{ev.SessionID, ev.Seq}] {
			t.Fatalf("session %s seq %d is in the log twice", ev.SessionID, ev.Seq)
		}
		logged[at{ev.SessionID, ev.Seq}] = true
	}
	if rep, err := l2.VerifyFull(ctx()); err != nil || !rep.OK() {
		t.Fatalf("full verification: %v, %v", rep.Problems, err)
	}
}
