package ledgertest

import (
	"errors"
	"slices"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// testCommitGroup: Commit writes a new session, its records, its end and
// its seal in one transaction — a record naming an earlier record of its
// batch by sequence (Record.Build) gets the committed one, and the session
// verifies — and a group whose later write fails leaves nothing behind.
func testCommitGroup(t *testing.T, h Harness) {
	e := open(t, h, nil)
	create, id, err := e.l.CreateSessionOp(ledger.SessionSpec{Goal: "run one command"})
	if err != nil {
		t.Fatal(err)
	}
	var named uint64
	recs := []ledger.Record{
		{Type: "intent_proposed", Payload: map[string]any{"step": 1}},
		{Type: "action", Build: func(prior []ledger.Event) (any, error) {
			if len(prior) != 1 {
				return nil, errors.New("want the intent before the action")
			}
			named = prior[0].Seq
			return map[string]any{"step": 1, "intent_seq": prior[0].Seq}, nil
		}},
	}
	appendOp, err := ledger.AppendOp(id, recs)
	if err != nil {
		t.Fatal(err)
	}
	end, err := ledger.EndOp(id, ledger.StatusCompleted)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.l.Commit(ctx(), create, appendOp, end, ledger.SealOp(id, "test"))
	if err != nil {
		t.Fatal(err)
	}
	evs := res[1].([]ledger.Event)
	if len(evs) != 2 || evs[0].Seq != 2 || named != 2 || string(evs[1].Payload) != `{"event_origin":"ironvise","intent_seq":2,"step":1,"type":"action"}` {
		t.Fatalf("appended %d events, the action named %d: %s; want the intent at 2 named by the action", len(evs), named, evs[len(evs)-1].Payload)
	}
	if seal := res[3].(ledger.SealResult); seal.Status != ledger.StatusCompleted || seal.AlreadySealed {
		t.Fatalf("seal %+v; want a new seal of a completed session", seal)
	}
	all, err := e.l.Events(ctx(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := types(all), []string{"genesis", "prompt_input", "intent_proposed", "action", "session_sealed"}; !slices.Equal(got, want) {
		t.Fatalf("events %v; want %v", got, want)
	}
	mustVerify(t, e.l, id)

	// A group that fails at its last write commits none of it.
	create2, id2, err := e.l.CreateSessionOp(ledger.SessionSpec{Goal: "never recorded"})
	if err != nil {
		t.Fatal(err)
	}
	app2, err := ledger.AppendOp(id2, []ledger.Record{{Type: "intent_proposed", Payload: map[string]any{"step": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.Commit(ctx(), create2, app2, ledger.SealOp(id, "test again")); err != nil {
		t.Fatalf("sealing a sealed session is idempotent: %v", err)
	}
	create3, id3, err := e.l.CreateSessionOp(ledger.SessionSpec{Goal: "never recorded either"})
	if err != nil {
		t.Fatal(err)
	}
	end3, err := ledger.EndOp(id, ledger.StatusFailed) // id is sealed: refused
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.Commit(ctx(), create3, end3); !errors.Is(err, ledger.ErrSealed) {
		t.Fatalf("a group ending a sealed session: %v; want ErrSealed", err)
	}
	if _, err := e.l.Session(ctx(), id3); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the session of the failed group: %v; want ErrNotFound (nothing committed)", err)
	}
	if _, err := e.l.Session(ctx(), id2); err != nil {
		t.Fatalf("the session of the committed group: %v", err)
	}
}
