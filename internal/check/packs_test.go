package check

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/verdict"
)

// TestSpecApprovalWithPacks runs docs/design/checks.md#acceptance-cases cases
// 39–41 through the whole pipeline with the real SOC 2 pack.
func TestSpecApprovalWithPacks(t *testing.T) {
	tw := newTripwire(t)
	ws := tw.Config().AllowedRoots[0]
	if err := os.MkdirAll(filepath.Join(ws, "certs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "certs", "server.key"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	soc2, err := policy.Load("soc2-audit", policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	guard := &fixedGuard{v: verdict.New(verdict.CheckGuard, verdict.Allow, verdict.GuardAllow, "ALLOW")}
	rc := func(c string) string {
		return `{"action":"run_command","params":{"command":"` + c + `"},"justification":"valid reason"}`
	}
	cases := []struct {
		name     string
		approver Approver
		raw      string
		want     []verdict.Code // code of each check that ran
	}{
		{"39 nmap, no approver", nil, rc("nmap -sV 10.0.0.1"),
			[]verdict.Code{verdict.OK, verdict.PolicyRequiresApproval, verdict.OK, verdict.ApprovalTimeout}},
		{"40 tcpdump", nil, rc("tcpdump -i any"), []verdict.Code{verdict.OK, verdict.PolicyCommandRule}},
		{"40 python3", nil, rc("python3 x.py"), []verdict.Code{verdict.OK, verdict.PolicyExecutableNotAllowed}},
		{"41 key approved", fixedApprover{true}, `{"action":"read_file","params":{"path":"certs/server.key"},"justification":"valid reason"}`,
			[]verdict.Code{verdict.OK, verdict.PolicyRequiresApproval, verdict.OK, verdict.ApprovalGranted, verdict.GuardAllow}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pipeline{Tripwire: tw, Policy: PolicyCheck(soc2), Guard: guard, Approver: tc.approver}
			r := p.Run(context.Background(), Input{Raw: tc.raw, Step: 1})
			if len(r.Verdicts) != len(tc.want) {
				t.Fatalf("verdicts %+v; want codes %v", r.Verdicts, tc.want)
			}
			for i, v := range r.Verdicts {
				if v.Code != tc.want[i] {
					t.Fatalf("verdict %d: %s %s; want %s", i, v.Check, v.Code, tc.want[i])
				}
			}
			if tc.name == "39 nmap, no approver" && (r.Decision == nil || r.Decision.DecidedBy != DecidedByNoApprover) {
				t.Fatalf("decision %+v", r.Decision)
			}
		})
	}
}
