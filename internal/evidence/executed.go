package evidence

import (
	"encoding/json"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Executed actions. The report, the CLI's session summary and the API's
// intent result all count them, and they once disagreed (one counted the
// complete action, another counted commands the sandbox never started), so
// the definition lives here once (docs/evidence.md#executed-actions).

// The wire names ActionExecuted compares with: the action that ends a
// session and the sandbox_result status of a command that never ran
// (sandbox.StatusAborted). They are the ledger's names, which never change.
const (
	actionComplete   = "complete"
	actionRunCommand = "run_command"
	actionWriteFile  = "write_file"
	sandboxAborted   = "aborted"
)

// ActionExecuted reports whether an action IronVise committed after its
// checks counts as executed: it is not complete (which ends the session
// and runs nothing) and IronVise actually started it. A run_command
// started when its sandbox_result (sandboxStatus, "" when none is
// recorded) is anything but aborted: a command that failed or timed out
// ran. A read_file or http_get started unless the tripwire denied it at
// execution (deniedAtExecution), which is counted as a denial instead.
func ActionExecuted(action, sandboxStatus string, deniedAtExecution bool) bool {
	switch action {
	case actionComplete:
		return false
	case actionRunCommand:
		return sandboxStatus != "" && sandboxStatus != sandboxAborted
	case actionWriteFile:
		// IronVise never writes: an allowed write_file is the agent's.
		return false
	}
	return !deniedAtExecution
}

// Action is one action IronVise committed, other than complete, as the
// report lists it: what ran, how the checks and the sandbox decided, and
// how it ended.
type Action struct {
	Sequence uint64 `json:"sequence"`
	Step     int    `json:"step"`
	Action   string `json:"action"`
	// Target is the command, path or URL as recorded (redacted).
	Target string `json:"target"`
	// Verdict is "allow", "approved" (an approval gate let it through) or
	// "denied at execution" (the tripwire stopped a read or a redirect).
	Verdict string `json:"verdict"`
	// Executed is ActionExecuted's answer; Summary.Executed counts them.
	Executed bool `json:"executed"`
	// ExecutedBy is "agent" for an action an agent hook allowed and the
	// agent ran itself (never counted as executed).
	ExecutedBy string `json:"executed_by,omitempty"`
	// Run is how a run_command ended (empty for the actions IronVise
	// runs itself, or when no sandbox_result was recorded).
	Run
}

// Run is how a command ended, as its sandbox_result records it.
type Run struct {
	// Status is the sandbox_result status; Reason says why the sandbox
	// aborted or timed out.
	Status string `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
	// ExitCode is the command's exit code (nil when it has none); Signal
	// names the signal that ended it.
	ExitCode *int   `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// DurationMS is the command's wall-clock time (nil when not recorded).
	DurationMS *int64 `json:"duration_ms"`
}

// committedActions lists the actions IronVise committed in a chain, other
// than complete, with their outcome: the one walk behind both
// Report.Actions and Summary.Executed.
func committedActions(evs []ledger.Event) []Action {
	results := map[string]sandboxPayload{}
	deniedAtExec := map[string]bool{}
	approved := map[string]bool{}
	proposed := map[uint64]string{} // intent_proposed sequence → intent_id
	for i := range evs {
		ev := &evs[i]
		// What a client appended says nothing of how IronVise's actions
		// ran.
		if ledger.EventOrigin(ev.Payload) == ledger.OriginClient {
			continue
		}
		switch ev.Type {
		case ledger.TypeIntentProposed:
			var p proposedPayload
			if json.Unmarshal(ev.Payload, &p) == nil {
				proposed[ev.Seq] = p.IntentID
			}
		case ledger.TypeSandboxResult:
			var r sandboxPayload
			if json.Unmarshal(ev.Payload, &r) == nil && r.IntentID != "" {
				results[r.IntentID] = r
			}
		case ledger.TypeCheckVerdict:
			var v verdictPayload
			if json.Unmarshal(ev.Payload, &v) != nil || v.IntentID == nil {
				continue
			}
			switch {
			case v.Phase == "execute" && v.Decision == "deny":
				deniedAtExec[*v.IntentID] = true
			case v.Decision == "require_approval":
				approved[*v.IntentID] = true
			}
		}
	}
	out := []Action{}
	for i := range evs {
		ev := &evs[i]
		if ev.Type != ledger.TypeAction || !committedAction(ev) {
			continue
		}
		var a struct {
			Step      int            `json:"step"`
			IntentSeq *uint64        `json:"intent_seq"`
			IntentID  string         `json:"intent_id"`
			Name      string         `json:"name"`
			Params    map[string]any `json:"params"`
			// ExecutedBy is "agent" when an agent hook's agent ran it.
			ExecutedBy string `json:"executed_by"`
		}
		if json.Unmarshal(ev.Payload, &a) != nil || a.Name == actionComplete {
			continue
		}
		if a.IntentID == "" && a.IntentSeq != nil {
			// An action recorded before it carried its intent_id names
			// its proposal, which does.
			a.IntentID = proposed[*a.IntentSeq]
		}
		act := Action{Sequence: ev.Seq, Step: a.Step, Action: a.Name, Target: target(a.Params), Verdict: "allow"}
		if approved[a.IntentID] {
			act.Verdict = "approved"
		}
		if deniedAtExec[a.IntentID] {
			act.Verdict = "denied at execution"
		}
		if r, ok := results[a.IntentID]; ok && a.IntentID != "" {
			act.Run = r.Run
		}
		act.Executed = ActionExecuted(a.Name, act.Status, deniedAtExec[a.IntentID])
		if a.ExecutedBy != "" {
			// Allowed by the checks and run by the agent itself: IronVise
			// executed nothing, whatever the action.
			act.Executed, act.ExecutedBy = false, a.ExecutedBy
		}
		out = append(out, act)
	}
	return out
}

// CountExecuted counts the executed actions of a session's chain
// (ActionExecuted over every action IronVise committed).
func CountExecuted(evs []ledger.Event) int {
	n := 0
	for _, a := range committedActions(evs) {
		if a.Executed {
			n++
		}
	}
	return n
}
