package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// outcomeTier answers each command with a fixed outcome, so that one
// session holds a command that ran, one that failed, one the sandbox could
// not start and one that timed out.
type outcomeTier struct{}

func (outcomeTier) Name() sandbox.TierName          { return sandbox.TierNone }
func (outcomeTier) Available(context.Context) error { return nil }
func (outcomeTier) SelfTest(context.Context) error  { return nil }
func (outcomeTier) Run(_ context.Context, req sandbox.Request) sandbox.Result {
	code := func(n int) *int { return &n }
	switch req.Command {
	case "echo fine":
		return sandbox.Result{Tier: sandbox.TierNone, Status: sandbox.StatusOK, ExitCode: code(0), Stdout: "fine\n", Duration: time.Millisecond}
	case "false":
		return sandbox.Result{Tier: sandbox.TierNone, Status: sandbox.StatusOK, ExitCode: code(1), Duration: time.Millisecond}
	case "sleep 100":
		r := sandbox.Result{Tier: sandbox.TierNone, Status: sandbox.StatusOK}
		r.TimedOut(time.Second, time.Second, "the process group was killed")
		return r
	}
	return sandbox.Aborted(sandbox.TierNone, "the tier could not be applied", time.Millisecond)
}

// TestExecutedCountIsOneDefinition runs one session with an allowed
// command, a failing one, one the sandbox could not start, one that timed
// out, a read, a denied intent and complete, and requires every place that
// counts executed actions to give the same number: the CLI's summary (the
// loop's Outcome), a resumed session's Outcome, the step results the API
// answers with, and the report in JSON and HTML.
func TestExecutedCountIsOneDefinition(t *testing.T) {
	h := newHarness(t)
	h.env.Tier = outcomeTier{}
	run := func(cmd string) string {
		return `{"action":"run_command","params":{"command":"` + cmd + `"},"justification":"check"}`
	}
	llm := script(t, run("echo fine"), run("false"), run("echo abort"), rcSudo, run("sleep 100"), rfNotes, complete)
	s := h.session(t, "audit", nil, nil)
	out, err := s.Run(context.Background(), RunOptions{LLM: llm})
	if err != nil {
		t.Fatal(err)
	}
	// echo fine, false, sleep 100 (timed out) and the read ran; the
	// aborted command, the denied sudo and complete did not.
	const want = 4
	if out.Executed != want || out.Denied != 1 {
		t.Fatalf("CLI summary: %d executed, %d denied; want %d executed, 1 denied", out.Executed, out.Denied, want)
	}
	evs := h.events(t, s.ID.String())
	if n := evidence.CountExecuted(evs); n != want {
		t.Fatalf("evidence.CountExecuted = %d; want %d", n, want)
	}
	ext, err := ResumeExternal(h.session(t, "audit", nil, nil), ExternalOptions{}, evs)
	if err != nil {
		t.Fatal(err)
	}
	if ext.out.Executed != want {
		t.Fatalf("resumed outcome: %d executed; want %d", ext.out.Executed, want)
	}
	rep, err := evidence.BuildReport(context.Background(), h.env.Ledger, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Executed != want || len(rep.Actions) != 5 {
		t.Fatalf("report: %d executed of %d actions; want %d of 5: %+v", rep.Summary.Executed, len(rep.Actions), want, rep.Actions)
	}
	var js bytes.Buffer
	if err := evidence.Render(rep, evidence.FormatJSON, &js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Summary struct {
			Executed int `json:"executed"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil || decoded.Summary.Executed != want {
		t.Fatalf("json report: executed %d (%v); want %d", decoded.Summary.Executed, err, want)
	}
	var page bytes.Buffer
	if err := evidence.Render(rep, evidence.FormatHTML, &page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "4 of 5 committed action(s) executed") ||
		!strings.Contains(page.String(), "<th>Executed actions</th><td class=\"\">4</td>") {
		t.Fatalf("html report does not count %d executed actions:\n%s", want, page.String())
	}
	for _, a := range rep.Actions {
		if a.Target == "echo abort" && (a.Executed || a.Status != "aborted") {
			t.Fatalf("the command the sandbox could not start is listed as %+v", a)
		}
		if a.Target == "sleep 100" && (!a.Executed || a.Status != "timeout" || a.DurationMS == nil) {
			t.Fatalf("the timed-out command is listed as %+v", a)
		}
	}
}
