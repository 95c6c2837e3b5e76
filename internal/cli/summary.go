package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/jsonerror"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/localsock/wire"
)

// RunResultFormat names the layout of the --json result of audit and exec
// (docs/cli.md#results-for-scripts---json-and---quiet).
const RunResultFormat = "ironvise-run/v1"

// runResult is the object `audit --json` and `exec --json` print on
// stdout when they end. The counts are the session's report summary
// (evidence.Summary), read from the ledger, so they are the numbers
// `ironvise report` gives for the same session.
type runResult struct {
	Format string `json:"format"`
	// SessionID and Status are null when the command failed before a
	// session existed.
	SessionID *string `json:"session_id"`
	Status    *string `json:"status"`
	Steps     int     `json:"steps"`
	Executed  int     `json:"executed"`
	Denied    int     `json:"denied"`
	// DeniedBy and Findings list every check and every severity once a
	// session exists; they are empty without one.
	DeniedBy map[string]int `json:"denied_by"`
	Findings map[string]int `json:"findings"`
	// Verification is verify-session's verdict on the session (null: no
	// session, or it could not be read).
	Verification *runVerification `json:"verification"`
	// ExitCode is the process's exit code, and OK says it is 0.
	ExitCode int  `json:"exit_code"`
	OK       bool `json:"ok"`
	// Error is what failed, as every failing --json command says it (the
	// message is the one printed as "ironvise: ..." on stderr); null when
	// nothing did.
	Error *jsonerror.Detail `json:"error"`
}

// runVerification is the short form of verify-session's result.
type runVerification struct {
	OK     bool                 `json:"ok"`
	Sealed bool                 `json:"sealed"`
	Error  *evidence.ChainError `json:"error"`
}

// resultOutput is how audit or exec reports its outcome: as usual, as one
// JSON object (--json) or as the session id alone (--quiet). With either
// flag, stdout carries that result only and what the command prints
// there otherwise goes to stderr.
type resultOutput struct {
	json, quiet bool
	// id is the session, once one exists.
	id *uuid.UUID
	// result is filled by record for --json.
	result runResult
	// recordErr says why the session's summary could not be read.
	recordErr error
}

// addResultFlags gives cmd --json and --quiet.
func addResultFlags(cmd *cobra.Command, asJSON, quiet *bool) {
	cmd.Flags().BoolVar(asJSON, "json", false, "print the result as one JSON object on stdout (docs/cli.md); the usual output goes to stderr")
	cmd.Flags().BoolVar(quiet, "quiet", false, "print only the session id on stdout; the usual output goes to stderr")
}

// newResultOutput checks the two flags: together they are a usage error.
func newResultOutput(asJSON, quiet bool) (*resultOutput, error) {
	if asJSON && quiet {
		return nil, failedWith(jsonerror.KindUsage, "", exitCode(ExitUsage, errors.New("--json and --quiet exclude each other: --json already carries the session id (.session_id)")))
	}
	return &resultOutput{json: asJSON, quiet: quiet}, nil
}

// resultOutputOf is the result output an exec request to the daemon asks
// for.
func resultOutputOf(output string) (*resultOutput, error) {
	switch output {
	case "":
		return newResultOutput(false, false)
	case wire.OutputJSON:
		return newResultOutput(true, false)
	case wire.OutputQuiet:
		return newResultOutput(false, true)
	}
	return nil, fmt.Errorf("unknown output %q", output)
}

// stdout is where the command writes what it would print on stdout: its
// own stdout, unless stdout is reserved for the result.
func (r *resultOutput) stdout(a *app) io.Writer {
	if r.json || r.quiet {
		return a.stderr
	}
	return a.stdout
}

// record notes the session once it has ended (or taken its step) and,
// for --json, reads its summary and verification from l. It uses its own
// deadline: an interrupted command still reports the session it recorded.
func (r *resultOutput) record(ctx context.Context, l *ledger.Ledger, id uuid.UUID) {
	r.id = &id
	if !r.json {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// One read and one verification of the chain give both.
	rep, v, err := evidence.ReportAndVerification(ctx, l, id)
	if err != nil {
		r.recordErr = fmt.Errorf("read and verify session %s: %w", id, err)
		return
	}
	sum := rep.Summary
	r.result.Status = &sum.Status
	r.result.Steps, r.result.Executed, r.result.Denied = sum.Steps, sum.Executed, sum.Denied
	r.result.DeniedBy, r.result.Findings = sum.DeniedBy, sum.Findings
	r.result.Verification = &runVerification{OK: v.OK, Sealed: v.Sealed, Error: v.Error}
}

// finish prints the result of a command that returned err and returns
// err unchanged: the exit code is the same with and without the flags.
func (r *resultOutput) finish(a *app, err error) error {
	switch {
	case r.quiet && r.id != nil:
		fmt.Fprintln(a.stdout, r.id.String())
	case r.json:
		res := r.result
		res.Format = RunResultFormat
		if r.id != nil {
			id := r.id.String()
			res.SessionID = &id
		}
		if res.DeniedBy == nil {
			res.DeniedBy, res.Findings = map[string]int{}, map[string]int{}
		}
		res.ExitCode = ExitOK
		var ee *exitError
		switch {
		case errors.As(err, &ee):
			res.ExitCode = ee.code
		case err != nil:
			res.ExitCode = ExitUsage
		}
		res.OK = res.ExitCode == ExitOK
		// A command that ran and exited non-zero is not a failure of
		// IronVise's: exit_code says it, and error stays null.
		if err != nil && (ee == nil || ee.err != nil) {
			d, _ := failureDetail(err, res.ExitCode)
			res.Error = &d
		}
		if r.recordErr != nil {
			fmt.Fprintf(a.stderr, "ironvise: WARNING: %v\n", r.recordErr)
			if res.Error == nil {
				d, _ := failureDetail(r.recordErr, res.ExitCode)
				res.Error = &d
			}
		}
		if perr := a.printJSON(res); perr != nil && err == nil {
			return exitCode(ExitUsage, fmt.Errorf("write the result: %w", perr))
		}
	}
	return err
}
