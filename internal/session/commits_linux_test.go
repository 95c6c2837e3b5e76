//go:build linux

package session

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/ledger"
)

// writeCommits is the number of write transactions the fixture's store
// committed so far: each is one durable commit (one WAL fsync).
func (f *fixture) writeCommits(t *testing.T) uint64 {
	t.Helper()
	c, ok := f.rt.Ledger.Backend().(interface{ WriteCommits() uint64 })
	if !ok {
		t.Fatalf("the store %T does not count its commits", f.rt.Ledger.Backend())
	}
	return c.WriteCommits()
}

func execIntent(t *testing.T, action, key, value string) string {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"action": action, "params": map[string]string{key: value}, "justification": "look at the workspace for the review"})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestPreparedExecCommitsTwice is exec's budget: a prepared session, one
// command and the end cost two durable commits — the session, the intent,
// its verdicts and the action before the command runs; the result, the
// observation, the end and the seal after — with every event recorded in
// order and the session verifying.
func TestPreparedExecCommitsTwice(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		status    ledger.Status
		ran       bool
	}{
		{"allowed", execIntent(t, "run_command", "command", "cat notes.txt"), ledger.StatusCompleted, true},
		{"denied", execIntent(t, "read_file", "path", "../../etc/shadow"), ledger.StatusAborted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			before := f.writeCommits(t)
			s, err := Prepare(f.rt, f.spec("exec: "+tc.name, nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.writeCommits(t); got != before {
				t.Fatalf("Prepare committed %d transactions; want none before the step", got-before)
			}
			res, err := s.Step(ctx, 1, tc.raw, agent.SourceAPI)
			if err != nil {
				t.Fatal(err)
			}
			if res.Committed != tc.ran {
				t.Fatalf("committed %v; want %v", res.Committed, tc.ran)
			}
			if got := f.writeCommits(t) - before; got != 1 {
				t.Fatalf("the step committed %d transactions; want 1 (everything before the command in one)", got)
			}
			if _, err := s.End(ctx, tc.status, "operator:cli"); err != nil {
				t.Fatal(err)
			}
			if got := f.writeCommits(t) - before; got != 2 {
				t.Fatalf("exec committed %d transactions; want 2", got)
			}
			want := []string{ledger.TypeGenesis, ledger.TypePromptInput, ledger.TypeIntentProposed}
			if tc.ran {
				want = append(want, ledger.TypeAction, ledger.TypeSandboxResult, ledger.TypeObservation, ledger.TypeSessionSealed)
			} else {
				want = append(want, ledger.TypeSessionSealed)
			}
			got := slices.DeleteFunc(f.types(t, s.ID.String()), func(typ string) bool { return typ == ledger.TypeCheckVerdict })
			if !slices.Equal(got, want) {
				t.Fatalf("events (verdicts left out) %v; want %v", got, want)
			}
			rep, err := f.rt.Ledger.VerifySession(ctx, s.ID)
			if err != nil || !rep.OK() {
				t.Fatalf("verify: %+v, %v", rep, err)
			}
			if rec := f.session(t, s.ID.String()); rec.Status != tc.status || !rec.Sealed() {
				t.Fatalf("session %s, sealed %v; want %s and sealed", rec.Status, rec.Sealed(), tc.status)
			}
		})
	}
}

// TestPreparedExecFailsClosed: when the commit before the command fails,
// the command does not run and the session was never created.
func TestPreparedExecFailsClosed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := Prepare(f.rt, f.spec("exec: cat notes.txt", nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Ledger.Close(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := s.Step(ctx, 1, execIntent(t, "run_command", "command", "cat notes.txt"), agent.SourceAPI)
	if !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("Step on a closed ledger: %v; want ErrClosed", err)
	}
	if res.Sandbox != nil || res.Committed {
		t.Fatalf("the command ran (%+v) although nothing could be recorded", res.Sandbox)
	}
}
