package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/session"
	"github.com/ironvise/ironvise/internal/verdict"
)

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
	var requireGuard bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check one intent JSON from stdin without running anything",
		Long: `Reads one intent JSON object on stdin, runs the deterministic checks
(schema, policy, tripwire, approval gates; the guard when configured) and prints
the verdict as JSON. Executes nothing. Exit code 0 = allow, 1 = deny, 2 = error.
An intent that needs approval is denied here: there is no approver.

The guard is required unless GUARD_REQUIRED=false. When none is configured
(no GUARD_LLM_BACKEND), the verdict says guard_not_configured and a warning
goes to stderr; with --require-guard, or an explicit GUARD_REQUIRED=true, the
intent is denied (exit 1) whenever no guard can run.

Use it as a pre-execution hook for any agent: pipe the tool call in, run the
tool only on exit code 0. For Claude Code and Codex use 'ironvise hook'
instead: it reads their hook events and blocks the way they understand (exit
code 2; exit code 1 lets the call run).`,
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
			// One limit for an intent, wherever it comes from: reading one
			// byte past it is enough to know the input is too large.
			raw, err := io.ReadAll(io.LimitReader(a.stdin, intent.MaxRawBytes+1))
			if err != nil {
				return exitCode(ExitUsage, fmt.Errorf("read stdin: %w", err))
			}
			out := checkOutput{PolicyHash: hash, TripwireHash: tw.Config().SHA256, Verdicts: []check.Timed{}}
			var res *check.Result
			if len(raw) > intent.MaxRawBytes {
				v := verdict.Denial(verdict.CheckSchema, verdict.SchemaTooLarge, intent.TooLarge(-1).Error())
				res = &check.Result{Decisive: v, Verdicts: []check.Timed{{Verdict: v}}}
			} else {
				g, gs, err := a.checkGuard(r.cfg, requireGuard)
				if err != nil {
					return err
				}
				defer g.Close()
				p := &check.Pipeline{Tripwire: tw, Policy: check.PolicyCheck(pol), Guard: g.Check(), GuardDisabled: g.Skip,
					GuardUnconfigured: gs.unconfigured, RequireGuard: gs.require}
				res = p.Run(a.ctx, check.Input{Raw: string(raw), Step: 1})
				if gs.unconfigured && !gs.require && res.Allowed() {
					// A hook that only reads the exit code would not see that
					// no guard ran.
					a.logger().Warn("no guard reviewed this intent", "code", verdict.GuardNotConfigured,
						"why", "GUARD_REQUIRED is unset, so a guard is required, but GUARD_LLM_BACKEND is not set",
						"fix", "set GUARD_LLM_BACKEND and GUARD_LLM_MODEL; pass --require-guard to deny instead; or set GUARD_REQUIRED=false to run without a guard")
				}
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
			if err := a.printJSON(out); err != nil {
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
	cmd.Flags().BoolVar(&requireGuard, "require-guard", false, "deny (exit 1) when no guard can run, instead of allowing with guard_not_configured")
	return cmd
}

// checkGuardState says how the check command runs without a guard.
type checkGuardState struct {
	// unconfigured: GUARD_REQUIRED is unset (so true) and no guard
	// backend is configured.
	unconfigured bool
	// require: a missing guard denies (--require-guard, or an explicit
	// GUARD_REQUIRED=true).
	require bool
}

// checkGuard is the guard of `ironvise check`: it runs when a guard backend
// is configured and GUARD_REQUIRED is not false. Without one, the verdict
// says guard_not_configured; it denies when the guard was asked for.
func (a *app) checkGuard(cfg *config.Config, requireFlag bool) (*session.Guard, checkGuardState, error) {
	gs := checkGuardState{require: requireFlag || (cfg.Guard.RequiredSet && cfg.Guard.Required)}
	switch {
	case !cfg.Guard.Required && !requireFlag:
		return session.GuardSkipped(guard.SkipNotRequired), gs, nil
	case cfg.Guard.Backend == "":
		gs.unconfigured = true
		return session.GuardSkipped(guard.SkipUnconfigured + " (GUARD_LLM_BACKEND is not set)"), gs, nil
	}
	g, err := a.startGuard(cfg, guard.Flags{})
	if err != nil && gs.require {
		// The guard was asked for and cannot start: deny rather than fail
		// with a usage error a hook might treat differently.
		return session.GuardSkipped("the guard cannot start: " + err.Error()), gs, nil
	}
	return g, gs, err
}
