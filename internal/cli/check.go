package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/verdict"
)

// maxCheckInput bounds what `ironvise check` reads from stdin; the schema
// check itself rejects anything over 64 KiB.
const maxCheckInput = 1 << 20

// checkOutput is the verdict JSON of `ironvise check`.
type checkOutput struct {
	Decision     verdict.Decision `json:"decision"`
	Check        verdict.Check    `json:"check"`
	Code         verdict.Code     `json:"code"`
	Message      string           `json:"message"`
	Rule         string           `json:"rule,omitempty"`
	Flags        []string         `json:"flags,omitempty"`
	Gates        []string         `json:"gates,omitempty"`
	Verdicts     []check.Timed    `json:"verdicts"`
	Intent       any              `json:"intent"`
	PolicyHash   *string          `json:"policy_hash"`
	TripwireHash string           `json:"tripwire_hash"`
}

func (a *app) checkCommand() *cobra.Command {
	var policyRef, policyPin, wsFlag string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check one intent JSON from stdin without running anything",
		Long: `Reads one intent JSON object on stdin, runs the deterministic checks
(schema, policy, tripwire, approval gates; the guard when configured) and prints
the verdict as JSON. Executes nothing. Exit code 0 = allow, 1 = deny, 2 = error.
An intent that needs approval is denied here: there is no approver.

Use it as a pre-execution hook for any agent: pipe the tool call in, run the
tool only on exit code 0.`,
		Example: `  echo '{"action":"run_command","params":{"command":"ls -la"},"justification":"list files"}' | ironvise check
  echo '{"action":"read_file","params":{"path":"../../etc/passwd"},"justification":"read it"}' | ironvise check --workspace ./project
  ironvise check --policy soc2-audit < intent.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := a.loadRules(wsFlag, policyRef, policyPin)
			if err != nil {
				return err
			}
			tw, pol, hash := r.tw, r.pol, r.polHash
			raw, err := io.ReadAll(io.LimitReader(a.stdin, maxCheckInput+1))
			if err != nil {
				return exitCode(ExitUsage, fmt.Errorf("read stdin: %w", err))
			}
			out := checkOutput{PolicyHash: hash, TripwireHash: tw.Config().SHA256, Verdicts: []check.Timed{}}
			var res *check.Result
			if len(raw) > maxCheckInput {
				v := verdict.Denial(verdict.CheckSchema, verdict.SchemaTooLarge, fmt.Sprintf("$: input exceeds %d bytes (max %d)", maxCheckInput, 65536))
				res = &check.Result{Decisive: v, Verdicts: []check.Timed{{Verdict: v}}}
			} else {
				// The guard runs only when one is configured (cli.md).
				g, err := a.optionalGuard(r.cfg)
				if err != nil {
					return err
				}
				defer g.close()
				p := &check.Pipeline{Tripwire: tw, Policy: check.PolicyCheck(pol), Guard: g.checkGuard(), GuardDisabled: g.skip}
				res = p.Run(a.ctx, check.Input{Raw: string(raw), Step: 1})
			}
			d := res.Decisive
			out.Decision, out.Check, out.Code, out.Message = verdict.Allow, d.Check, d.Code, d.Message
			if !res.Allowed() {
				out.Decision = verdict.Deny
			}
			out.Rule, out.Flags, out.Gates = d.Rule, res.Flags, d.Gates
			out.Verdicts = res.Verdicts
			if res.Intent != nil {
				out.Intent = res.Intent
			}
			enc := json.NewEncoder(a.stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(out); err != nil {
				return exitCode(ExitUsage, fmt.Errorf("write verdict: %w", err))
			}
			if !res.Allowed() {
				return exitCode(ExitDenied, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&policyRef, "policy", "", "policy file or shipped pack name (see 'ironvise policy list')")
	cmd.Flags().StringVar(&policyPin, "policy-sha256", "", "refuse the policy unless its SHA-256 is this hex value")
	cmd.Flags().StringVar(&wsFlag, "workspace", "", "workspace directory (default: the current directory)")
	return cmd
}
