package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Staging. Each commit of the ledger costs an fsync, so a step does not
// commit its records one by one: it stages them and commits them together
// at the points where durability matters — before anything executes (the
// proposal, the verdicts and the action in one commit: what runs is on
// record first), before the pipeline waits for an approver, and when the
// step ends. A caller that ends the session right after one step (exec)
// may hold the records written after the command (HoldResults) until End,
// which commits them with the end and the seal.

// stage is what the session staged and has not committed yet. mu is held
// while a commit runs, so nothing is staged into a commit under way.
type stage struct {
	mu sync.Mutex
	// ops are ledger writes committed first (the session's creation,
	// when it was deferred to the first step's commit).
	ops  []ledger.Op
	recs []ledger.Record
	// done[i] receives the committed event of recs[i] (may be nil).
	done []func(ledger.Event)
	// hold leaves the records of a step's results staged until End.
	hold bool
}

// seqRef is an event of this session that a later payload names: its
// sequence once committed, before that its index among the staged records
// (the same commit then assigns both, see ledger.Record.Build).
type seqRef struct {
	seq       uint64
	idx       int
	committed bool
}

// resolve returns the sequence of r from the events appended before the
// record being built.
func (r *seqRef) resolve(prior []ledger.Event) (uint64, error) {
	if r == nil {
		return 0, errors.New("agent: a staged record names an event that was never staged")
	}
	if r.committed {
		return r.seq, nil
	}
	if r.idx < 0 || r.idx >= len(prior) {
		return 0, fmt.Errorf("agent: a staged record names event %d of its commit, which precedes it by %d", r.idx, len(prior))
	}
	return prior[r.idx].Seq, nil
}

// DeferCreate stages op, the session's creation (ledger.CreateSessionOp),
// so that it commits with the session's first write: exec's session and
// its step before the command then cost one commit.
func (s *Session) DeferCreate(op ledger.Op) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.ops = append(s.st.ops, op)
}

// HoldResults makes each step leave the records written after its command
// ran (sandbox_result, observation, session_halted) staged until End
// commits them with the session's end and seal. For a caller that ends the
// session right after the step and reports the command's output only after
// End returned (exec); the StepResult's sequence numbers of those records
// stay zero.
func (s *Session) HoldResults() {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.hold = true
}

// stageRecord stages one event with its payload redacted (see append);
// done, when set, receives it once committed. It returns the record's
// reference.
func (s *Session) stageRecord(typ string, payload any, done func(ledger.Event)) (*seqRef, error) {
	clean, err := s.redactPayload(typ, payload)
	if err != nil {
		return nil, err
	}
	return s.stageRec(ledger.Record{Type: typ, Payload: clean}, done), nil
}

// stageBuilt stages an event whose payload names earlier events by
// sequence: build runs inside the commit (ledger.Record.Build).
func (s *Session) stageBuilt(typ string, build func(prior []ledger.Event) (any, error), done func(ledger.Event)) *seqRef {
	return s.stageRec(ledger.Record{Type: typ, Build: func(prior []ledger.Event) (any, error) {
		v, err := build(prior)
		if err != nil {
			return nil, err
		}
		return s.redactPayload(typ, v)
	}}, done)
}

func (s *Session) stageRec(r ledger.Record, done func(ledger.Event)) *seqRef {
	ref := &seqRef{}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	ref.idx = len(s.st.recs)
	s.st.recs = append(s.st.recs, r)
	s.st.done = append(s.st.done, func(ev ledger.Event) {
		ref.seq, ref.committed = ev.Seq, true
		if done != nil {
			done(ev)
		}
	})
	return ref
}

// flush commits everything staged, then tail (ops after the records: the
// end and the seal), in one transaction under its own write deadline, and
// returns tail's results. Staged records are dropped whether the commit
// succeeded or not: after a failed commit the step stops, and nothing it
// staged is executed.
func (s *Session) flush(ctx context.Context, tail ...ledger.Op) ([]any, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	ops, recs, done := s.st.ops, s.st.recs, s.st.done
	s.st.ops, s.st.recs, s.st.done = nil, nil, nil
	if len(recs) > 0 {
		op, err := ledger.AppendOp(s.ID, recs)
		if err != nil {
			s.st.ops = ops // a deferred creation still goes with the next write
			return nil, err
		}
		ops = append(ops, op)
	}
	ops = append(ops, tail...)
	if len(ops) == 0 {
		return nil, nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.env.writeTimeout())
	defer cancel()
	res, err := s.env.Ledger.Commit(wctx, ops...)
	if err != nil {
		return nil, err
	}
	if len(recs) > 0 {
		evs := res[len(ops)-len(tail)-1].([]ledger.Event)
		for i, ev := range evs {
			done[i](ev)
		}
	}
	return res[len(ops)-len(tail):], nil
}

// holding reports whether a step's results stay staged until End.
func (s *Session) holding() bool {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.hold
}

// redactPayload passes every string of a payload through the session's
// redactor (see append); observations pass unchanged.
func (s *Session) redactPayload(typ string, payload any) (any, error) {
	if typ == ledger.TypeObservation {
		return payload, nil
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", typ, err)
	}
	clean, _, err := s.red.JSON(raw)
	if err != nil {
		return nil, fmt.Errorf("redact %s: %w", typ, err)
	}
	return json.RawMessage(clean), nil
}
