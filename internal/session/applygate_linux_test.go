//go:build linux

package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/ledger"
)

// TestApplyGate: an agent-loop session in overlay mode that completes
// with changes opens the workspace_apply gate in the API's approvals table
// (the approver the server uses); granted, the changes reach the real
// workspace and workspace_applied is on the chain before the seal; denied
// (or with no approver at all), the real workspace is unchanged and the
// layer stays for ironvise apply. The chain verifies either way.
func TestApplyGate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		approver bool
		approve  bool
	}{{"granted", true, true}, {"denied", true, false}, {"no approver", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := overlayFixture(t)
			ctx := context.Background()
			client := mock(t,
				`{"action":"run_command","params":{"command":"sed -i 's/old line/new line/' main.txt && echo built > out.txt"},"justification":"format the file and build"}`,
				`{"action":"complete","params":{"findings":[]},"justification":"the work is done"}`)
			spec := f.spec("format the project", client)
			if tc.approver {
				spec.Approvals = func(id uuid.UUID) check.Approver {
					return &agent.APIApprover{Ledger: f.rt.Ledger, SessionID: id, Poll: 10 * time.Millisecond}
				}
			}
			s, err := Create(ctx, f.rt, spec)
			if err != nil {
				t.Fatal(err)
			}
			decided := make(chan error, 1)
			if tc.approver {
				// An operator decides the pending gate, as route 25 does.
				go func() {
					for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
						a, err := f.rt.Ledger.PendingApproval(ctx, s.ID)
						if err != nil {
							continue
						}
						if a.ActionName != ApplyAction {
							decided <- nil
							return
						}
						decided <- f.rt.Ledger.DecideApproval(ctx, a.GateID, tc.approve, agent.EncodeDecision("operator:api:test", nil))
						return
					}
					decided <- context.DeadlineExceeded
				}()
			}
			out, err := s.Run(ctx, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.approver {
				if err := <-decided; err != nil {
					t.Fatalf("deciding the gate: %v", err)
				}
			}
			if out.Status != ledger.StatusCompleted {
				t.Fatalf("outcome %s (%s: %s)", out.Status, out.Stop, out.StopMessage)
			}
			types := f.types(t, s.ID.String())
			if !slices.Contains(types, ledger.TypeApprovalRequired) || !slices.Contains(types, ledger.TypeApprovalDecision) {
				t.Fatalf("no apply gate on the chain: %v", types)
			}
			main, _ := os.ReadFile(filepath.Join(f.ws, "main.txt"))
			_, outErr := os.Stat(filepath.Join(f.ws, "out.txt"))
			if tc.approve {
				if string(main) != "alpha\nnew line\nomega\n" || outErr != nil {
					t.Fatalf("granted, the real workspace has main.txt %q and out.txt %v", main, outErr)
				}
				i := slices.Index(types, ledger.TypeWorkspaceApplied)
				if i < 0 || i > slices.Index(types, ledger.TypeSessionSealed) {
					t.Fatalf("workspace_applied is not on the chain before the seal: %v", types)
				}
			} else {
				if string(main) != "alpha\nold line\nomega\n" || outErr == nil {
					t.Fatalf("not granted, the real workspace changed: main.txt %q, out.txt %v", main, outErr)
				}
				if slices.Contains(types, ledger.TypeWorkspaceApplied) {
					t.Fatalf("not granted, yet workspace_applied: %v", types)
				}
				// The layer stays: an operator can still apply it.
				res, err := ApplyWorkspace(ctx, f.rt.Ledger, f.cfg.DataDir, s.ID, 0, true, "operator:test")
				if err != nil || len(res.Changes) != 2 {
					t.Fatalf("a dry run after the gate: %+v %v; want the 2 changes still pending", res, err)
				}
			}
			if r, err := f.rt.Ledger.VerifySession(ctx, s.ID); err != nil || !r.OK() {
				t.Fatalf("verify: %+v %v", r, err)
			}
		})
	}
}
