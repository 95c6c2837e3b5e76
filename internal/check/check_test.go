package check

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

func newTripwire(t testing.TB) *tripwire.Tripwire {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := tripwire.LoadConfigBytes([]byte(`{"allowed_domains":["example.com"]}`), tripwire.LoadOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	return tripwire.New(cfg, tripwire.Options{Workspace: ws})
}

// gatePolicy is a stand-in for check 2 that routes one program to approval.
// It is an interface fake: this file tests the pipeline's sequencing; the
// real policy engine is tested in package policy and end to end in the
// CLI tests.
type gatePolicy struct {
	gateProgram string
	onTimeout   string
	panics      bool
}

func (g gatePolicy) Evaluate(v *tripwire.View) verdict.Verdict {
	if g.panics {
		panic("boom")
	}
	if v.Command != nil && len(v.Command.Commands) > 0 && v.Command.Commands[0].Program == g.gateProgram {
		r := verdict.New(verdict.CheckPolicy, verdict.RequireApproval, verdict.PolicyRequiresApproval, "rule scan requires approval (gates: net-scan)")
		r.Gates = []string{"net-scan"}
		return r
	}
	return verdict.Pass(verdict.CheckPolicy)
}

func (g gatePolicy) TriggeredGates(_ *tripwire.View, pv verdict.Verdict) (GateRequest, bool) {
	if pv.Decision != verdict.RequireApproval {
		return GateRequest{}, false
	}
	return GateRequest{Gates: pv.Gates, TimeoutSeconds: 120, OnTimeout: g.onTimeout}, true
}

type fixedGuard struct {
	v      verdict.Verdict
	panics bool
	got    *GuardRequest
}

func (f *fixedGuard) Review(_ context.Context, req GuardRequest) verdict.Verdict {
	if f.panics {
		panic("guard bug")
	}
	f.got = &req
	return f.v
}

type fixedApprover struct{ approve bool }

func (a fixedApprover) Decide(_ context.Context, req ApprovalRequest) ApprovalDecision {
	return ApprovalDecision{Approved: a.approve, DecidedBy: DecidedByCLI}
}

const rcLS = `{"action":"run_command","params":{"command":"ls -la"},"justification":"valid reason"}`

func checks(r *Result) []verdict.Check {
	var out []verdict.Check
	for _, v := range r.Verdicts {
		out = append(out, v.Check)
	}
	return out
}

func TestPipelineOrderAndFirstDenyStops(t *testing.T) {
	tw := newTripwire(t)
	guardAllow := &fixedGuard{v: verdict.New(verdict.CheckGuard, verdict.Allow, verdict.GuardAllow, "ALLOW")}
	cases := []struct {
		name      string
		p         *Pipeline
		raw       string
		wantCheck []verdict.Check
		wantCode  verdict.Code
		allowed   bool
	}{
		{"allow runs all", &Pipeline{Tripwire: tw, Guard: guardAllow}, rcLS,
			[]verdict.Check{"schema", "policy", "tripwire", "guard"}, verdict.GuardAllow, true},
		{"guard disabled skips", &Pipeline{Tripwire: tw, GuardDisabled: "--no-guard"}, rcLS,
			[]verdict.Check{"schema", "policy", "tripwire", "guard"}, verdict.GuardDisabled, true},
		{"schema deny stops", &Pipeline{Tripwire: tw, Guard: guardAllow}, `{"action":"delete_file"}`,
			[]verdict.Check{"schema"}, verdict.SchemaUnknownAction, false},
		{"tripwire deny stops", &Pipeline{Tripwire: tw, Guard: guardAllow}, `{"action":"run_command","params":{"command":"sudo ls"},"justification":"valid reason"}`,
			[]verdict.Check{"schema", "policy", "tripwire"}, verdict.CmdBannedProgram, false},
		{"guard deny", &Pipeline{Tripwire: tw, Guard: &fixedGuard{v: verdict.Denial(verdict.CheckGuard, verdict.GuardDeny, "off goal")}}, rcLS,
			[]verdict.Check{"schema", "policy", "tripwire", "guard"}, verdict.GuardDeny, false},
		{"guard panic denies", &Pipeline{Tripwire: tw, Guard: &fixedGuard{panics: true}}, rcLS,
			[]verdict.Check{"schema", "policy", "tripwire", "guard"}, verdict.CheckInternalError, false},
		{"policy panic denies", &Pipeline{Tripwire: tw, Policy: gatePolicy{panics: true}, Guard: guardAllow}, rcLS,
			[]verdict.Check{"schema", "policy"}, verdict.CheckInternalError, false},
		{"no tripwire fails closed", &Pipeline{Guard: guardAllow}, rcLS,
			[]verdict.Check{"schema", "tripwire"}, verdict.CheckInternalError, false},
		{"approval without approver", &Pipeline{Tripwire: tw, Policy: gatePolicy{gateProgram: "ls", onTimeout: "deny"}, Guard: guardAllow}, rcLS,
			[]verdict.Check{"schema", "policy", "tripwire", "approval"}, verdict.ApprovalTimeout, false},
		{"approval on_timeout allow without approver", &Pipeline{Tripwire: tw, Policy: gatePolicy{gateProgram: "ls", onTimeout: "allow"}, Guard: guardAllow}, rcLS,
			[]verdict.Check{"schema", "policy", "tripwire", "approval", "guard"}, verdict.GuardAllow, true},
		{"approval granted then guard", &Pipeline{Tripwire: tw, Policy: gatePolicy{gateProgram: "ls", onTimeout: "deny"}, Guard: guardAllow, Approver: fixedApprover{true}}, rcLS,
			[]verdict.Check{"schema", "policy", "tripwire", "approval", "guard"}, verdict.GuardAllow, true},
		{"approval rejected", &Pipeline{Tripwire: tw, Policy: gatePolicy{gateProgram: "ls", onTimeout: "deny"}, Guard: guardAllow, Approver: fixedApprover{false}}, rcLS,
			[]verdict.Check{"schema", "policy", "tripwire", "approval"}, verdict.ApprovalRejected, false},
		{"policy approval but tripwire denies first", &Pipeline{Tripwire: tw, Policy: gatePolicy{gateProgram: "sudo", onTimeout: "deny"}, Guard: guardAllow},
			`{"action":"run_command","params":{"command":"sudo ls"},"justification":"valid reason"}`,
			[]verdict.Check{"schema", "policy", "tripwire"}, verdict.CmdBannedProgram, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.p.Run(context.Background(), Input{Raw: tc.raw, Step: 2, Goal: "g"})
			if got := checks(r); len(got) != len(tc.wantCheck) || func() bool {
				for i := range got {
					if got[i] != tc.wantCheck[i] {
						return true
					}
				}
				return false
			}() {
				t.Fatalf("checks run %v; want %v", got, tc.wantCheck)
			}
			if r.Decisive.Code != tc.wantCode || r.Allowed() != tc.allowed {
				t.Fatalf("decisive %s allowed=%v; want %s allowed=%v", r.Decisive.Code, r.Allowed(), tc.wantCode, tc.allowed)
			}
		})
	}
}

func TestApprovalRecords(t *testing.T) {
	tw := newTripwire(t)
	p := &Pipeline{Tripwire: tw, Policy: gatePolicy{gateProgram: "ls", onTimeout: "deny"}}
	r := p.Run(context.Background(), Input{Raw: rcLS, Step: 7})
	if r.Approval == nil || r.Decision == nil {
		t.Fatal("approval not recorded")
	}
	if r.Approval.GateID == "" || r.Approval.GateID != r.Decision.GateID || r.Approval.ActionName != "run_command" ||
		r.Approval.ActionParamsSummary != `{"command":"ls -la"}` || r.Approval.TimeoutSeconds != 120 || r.Approval.Step != 7 {
		t.Fatalf("request %+v", r.Approval)
	}
	if r.Decision.DecidedBy != DecidedByNoApprover || r.Decision.Approved || *r.Decision.Reason != "no_approver" {
		t.Fatalf("decision %+v", r.Decision)
	}
}

func TestGuardSeesFlagsNotObservations(t *testing.T) {
	tw := newTripwire(t)
	g := &fixedGuard{v: verdict.New(verdict.CheckGuard, verdict.Allow, verdict.GuardAllow, "ALLOW")}
	p := &Pipeline{Tripwire: tw, Guard: g}
	r := p.Run(context.Background(), Input{Raw: `{"action":"run_command","params":{"command":"sh ./x.sh"},"justification":"valid reason"}`, Step: 3, Goal: "audit", SessionID: "s1", SessionFlags: []string{"prompt_sensitive_target"}})
	if !r.Allowed() || g.got == nil {
		t.Fatalf("guard not called: %+v", r.Decisive)
	}
	if g.got.Step != 3 || g.got.Goal != "audit" || len(g.got.Flags) != 2 || g.got.Flags[1] != "script_file" {
		t.Fatalf("guard request %+v", g.got)
	}
}

func BenchmarkPipelineRunCommand(b *testing.B) {
	// Target (issue acceptance): the whole deterministic pipeline on a
	// typical run_command intent under 20 µs/op.
	tw := newTripwire(b)
	p := &Pipeline{Tripwire: tw, GuardDisabled: "no guard configured"}
	raw := `{"action":"run_command","params":{"command":"grep -rn 'PermitRootLogin' /etc/ssh 2>/dev/null | head -20"},"justification":"check sshd root login setting"}`
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := p.Run(ctx, Input{Raw: raw, Step: 1}); !r.Allowed() {
			b.Fatal(r.Decisive)
		}
	}
}

// recSink records what the pipeline streams, failing on the n-th call.
type recSink struct {
	log    []string
	failAt int
}

func (r *recSink) add(s string) error {
	r.log = append(r.log, s)
	if r.failAt > 0 && len(r.log) == r.failAt {
		return errors.New("disk full")
	}
	return nil
}
func (r *recSink) Proposed(_ context.Context, _ string, in *intent.Intent) error {
	if in == nil {
		return r.add("proposed:null")
	}
	return r.add("proposed")
}
func (r *recSink) Verdict(_ context.Context, v Timed) error { return r.add(string(v.Check)) }
func (r *recSink) ApprovalRequired(context.Context, ApprovalRequest) error {
	return r.add("approval_required")
}
func (r *recSink) ApprovalDecided(context.Context, ApprovalDecision) error {
	return r.add("approval_decision")
}

func TestSinkOrderAndFailure(t *testing.T) {
	tw := newTripwire(t)
	guard := &fixedGuard{v: verdict.New(verdict.CheckGuard, verdict.Allow, verdict.GuardAllow, "ALLOW")}
	s := &recSink{}
	p := &Pipeline{Tripwire: tw, Policy: gatePolicy{gateProgram: "ls", onTimeout: "deny"}, Guard: guard, Approver: fixedApprover{true}, Sink: s}
	if r := p.Run(context.Background(), Input{Raw: rcLS, Step: 1}); !r.Allowed() {
		t.Fatalf("denied: %+v", r.Decisive)
	}
	want := "proposed schema policy tripwire approval_required approval_decision approval guard"
	if got := strings.Join(s.log, " "); got != want {
		t.Fatalf("order %q; want %q", got, want)
	}
	s = &recSink{}
	p.Sink = s
	p.Run(context.Background(), Input{Raw: "not json", Step: 1})
	if got := strings.Join(s.log, " "); got != "proposed:null schema" {
		t.Fatalf("schema failure order %q", got)
	}
	for failAt := 1; failAt <= 8; failAt++ {
		s = &recSink{failAt: failAt}
		p.Sink = s
		r := p.Run(context.Background(), Input{Raw: rcLS, Step: 1})
		if r.Allowed() || r.RecordErr == nil || r.Decisive.Code != verdict.CheckInternalError {
			t.Fatalf("sink failing at call %d: allowed=%v %+v", failAt, r.Allowed(), r.Decisive)
		}
		if len(s.log) != failAt {
			t.Fatalf("sink failing at call %d: pipeline went on to %v", failAt, s.log)
		}
	}
}
