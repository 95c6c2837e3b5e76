package evidence

import (
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestExecutedByAgent: an action an agent hook allowed is the agent's to
// run, so no count says IronVise executed it, and write_file never runs in
// IronVise.
func TestExecutedByAgent(t *testing.T) {
	if ActionExecuted("write_file", "", false) {
		t.Error("write_file counted as executed by IronVise")
	}
	if !ActionExecuted("read_file", "", false) {
		t.Error("a read IronVise ran is executed")
	}
	evs := []ledger.Event{
		{Seq: 1, Type: ledger.TypeIntentProposed, Payload: []byte(`{"event_origin":"ironvise","intent_id":"a","step":1}`)},
		{Seq: 2, Type: ledger.TypeAction, Payload: []byte(`{"event_origin":"ironvise","executed_by":"agent","intent_id":"a","intent_seq":1,"name":"read_file","params":{"path":"x"},"step":1}`)},
		{Seq: 3, Type: ledger.TypeIntentProposed, Payload: []byte(`{"event_origin":"ironvise","intent_id":"b","step":2}`)},
		{Seq: 4, Type: ledger.TypeAction, Payload: []byte(`{"event_origin":"ironvise","intent_id":"b","intent_seq":3,"name":"read_file","params":{"path":"y"},"step":2}`)},
	}
	acts := committedActions(evs)
	if len(acts) != 2 || acts[0].Executed || acts[0].ExecutedBy != "agent" || !acts[1].Executed || acts[1].ExecutedBy != "" {
		t.Errorf("actions %+v", acts)
	}
	if n := CountExecuted(evs); n != 1 {
		t.Errorf("CountExecuted = %d; want 1", n)
	}
}
