package ledger

import (
	"strings"
	"testing"
)

// chain builds a span of events from sequence 10 on, with the given types
// and payloads (only Seq, Type and Payload matter to ExecutedObservation).
func chain(evs ...[2]string) []Event {
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = Event{Seq: uint64(10 + i), Type: e[0], Payload: []byte(e[1])}
	}
	return out
}

func TestExecutedObservation(t *testing.T) {
	const (
		intent   = `{"event_origin":"ironvise","intent_id":"i-1","step":2,"type":"intent_proposed"}`
		runCmd   = `{"event_origin":"ironvise","intent_id":"i-1","intent_seq":10,"name":"run_command","params":{"command":"cat notes"},"step":2,"type":"action"}`
		readFile = `{"event_origin":"ironvise","intent_id":"i-1","intent_seq":10,"name":"read_file","params":{"path":"notes"},"step":2,"type":"action"}`
		sandbox  = `{"event_origin":"ironvise","intent_id":"i-1","status":"ok","type":"sandbox_result"}`
		obsRun   = `{"action_seq":11,"content":"PermitRootLogin yes","event_origin":"ironvise","sandbox_result_seq":12,"step":2,"type":"observation"}`
		obsRead  = `{"action_seq":11,"content":"PermitRootLogin yes","event_origin":"ironvise","step":2,"type":"observation"}`
		// Legacy shapes: written before origins were recorded.
		lIntent  = `{"intent_id":"i-1","step":2,"type":"intent_proposed"}`
		lRunCmd  = `{"intent_seq":10,"name":"run_command","params":{"command":"cat notes"},"step":2,"type":"action"}`
		lSandbox = `{"intent_id":"i-1","status":"ok","type":"sandbox_result"}`
		lObs     = `{"action_seq":11,"content":"PermitRootLogin yes","step":2,"type":"observation"}`
	)
	cases := []struct {
		name string
		span []Event
		seq  uint64
		want string // "" accepts; else a part of the problem
	}{
		{"run_command observed by IronVise", chain([2]string{"intent_proposed", intent}, [2]string{"action", runCmd}, [2]string{"sandbox_result", sandbox}, [2]string{"observation", obsRun}), 13, ""},
		{"read_file observed by IronVise", chain([2]string{"intent_proposed", intent}, [2]string{"action", readFile}, [2]string{"observation", obsRead}), 12, ""},
		{"legacy run_command (old ledgers stay evidence)", chain([2]string{"intent_proposed", lIntent}, [2]string{"action", lRunCmd}, [2]string{"sandbox_result", lSandbox}, [2]string{"observation", lObs}), 13, ""},
		// The forgery of issue 13: a client appends an observation whose
		// text it chose.
		{"client observation", chain([2]string{"observation", `{"content":"root password hunter2","event_origin":"client","type":"observation"}`}), 10, "appended by a client"},
		// ...even one that copies IronVise's binding fields (today's route
		// refuses extra fields; the origin alone already excludes it).
		{"client observation with a binding", chain([2]string{"intent_proposed", intent}, [2]string{"action", readFile}, [2]string{"observation", `{"action_seq":11,"content":"x","event_origin":"client","step":2,"type":"observation"}`}), 12, "appended by a client"},
		{"legacy client observation", chain([2]string{"observation", `{"content":"root password hunter2","type":"observation"}`}), 10, "names no earlier action"},
		{"legacy client action", chain([2]string{"action", `{"name":"read_file","params":{"path":"x"},"type":"action"}`}, [2]string{"observation", `{"action_seq":10,"content":"x","type":"observation"}`}), 11, "not committed by IronVise's checks"},
		{"client action under an IronVise observation", chain([2]string{"intent_proposed", intent}, [2]string{"action", `{"event_origin":"client","intent_seq":10,"name":"read_file","params":{},"type":"action"}`}, [2]string{"observation", obsRead}), 12, "of origin client"},
		{"not an observation", chain([2]string{"thought", `{"content":"x","event_origin":"ironvise","type":"thought"}`}), 10, "not an observation"},
		{"complete executes nothing", chain([2]string{"intent_proposed", intent}, [2]string{"action", `{"event_origin":"ironvise","intent_seq":10,"name":"complete","params":{},"type":"action"}`}, [2]string{"observation", obsRead}), 12, "executes nothing"},
		{"run_command without its sandbox_result", chain([2]string{"intent_proposed", intent}, [2]string{"action", runCmd}, [2]string{"thought", `{"event_origin":"ironvise","type":"thought"}`}, [2]string{"observation", obsRun}), 13, "sandbox_result"},
		{"sandbox_result of another intent", chain([2]string{"intent_proposed", intent}, [2]string{"action", runCmd}, [2]string{"sandbox_result", strings.Replace(sandbox, "i-1", "i-2", 1)}, [2]string{"observation", obsRun}), 13, "not the intent"},
		{"legacy run_command without a run", chain([2]string{"intent_proposed", lIntent}, [2]string{"action", lRunCmd}, [2]string{"observation", strings.Replace(lObs, "11", "11", 1)}), 12, "has no sandbox_result"},
		{"unknown origin", chain([2]string{"observation", `{"content":"x","event_origin":"someone","type":"observation"}`}), 10, "unknown origin"},
		{"action outside the span", []Event{{Seq: 12, Type: "observation", Payload: []byte(obsRead)}}, 12, "not in the chain"},
		// An agent hook's read: IronVise checked it, the agent ran it.
		{"read_file the agent ran", chain([2]string{"intent_proposed", intent}, [2]string{"action", strings.Replace(readFile, `"name"`, `"executed_by":"agent","name"`, 1)}, [2]string{"observation", obsRead}), 12, "not by IronVise"},
		{"write_file", chain([2]string{"intent_proposed", intent}, [2]string{"action", `{"event_origin":"ironvise","intent_seq":10,"name":"write_file","params":{"path":"a"},"step":2,"type":"action"}`}, [2]string{"observation", obsRead}), 12, "executes nothing"},
		{"step mismatch", chain([2]string{"intent_proposed", intent}, [2]string{"action", readFile}, [2]string{"observation", strings.Replace(obsRead, `"step":2`, `"step":3`, 1)}), 12, "of step"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			content, problem := ExecutedObservation(tc.span, tc.seq)
			switch {
			case tc.want == "" && problem != "":
				t.Fatalf("got problem %q; want the observation accepted", problem)
			case tc.want == "" && content != "PermitRootLogin yes":
				t.Fatalf("got content %q; want the observation's", content)
			case tc.want != "" && !strings.Contains(problem, tc.want):
				t.Fatalf("got problem %q (content %q); want one containing %q", problem, content, tc.want)
			}
		})
	}
}

func TestEventOrigin(t *testing.T) {
	for payload, want := range map[string]string{
		`{"event_origin":"ironvise","type":"x"}`: OriginIronVise,
		`{"event_origin":"client","type":"x"}`:   OriginClient,
		`{"type":"x"}`:                           OriginLegacy,
		`not json`:                               "unreadable",
	} {
		if got := EventOrigin([]byte(payload)); got != want {
			t.Errorf("EventOrigin(%s) = %q; want %q", payload, got, want)
		}
	}
}
