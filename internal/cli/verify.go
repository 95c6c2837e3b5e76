package cli

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/jsonerror"
	"github.com/ironvise/ironvise/internal/ledger"
)

func (a *app) verifySessionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify-session <session-id>",
		Short: "Verify a session's chain, signatures, goal, log inclusion and seal",
		Long: `Verifies one session from the ledger with five separate checks (docs/ledger.md):

  chain       every event's hash recomputed from the stored bytes, prev_hash
              links, sequences dense from 0
  signatures  every event signed by the key valid at its sequence; key
              rotations signed by the previous key; the key table and the
              session's listed key and did:key agree
  goal        the session's goal_hash matches its goal and its genesis event;
              its listed policy hash, model and sandbox tier match the genesis
  log         every event covered by the newest checkpoint is included in it,
              and the checkpoint's signature verifies
  seal        a sealed session's seal is the last event and commits to the tip
  findings    every finding of a complete action IronVise committed cites
              observations IronVise recorded from actions it executed (never
              an event a client appended), with its quotes in them

Exit status: 0 when all six pass; 1 when any fails (the output names the
check, the first broken sequence and why); 2 on a usage or configuration
error, or when the session does not exist. The nil UUID verifies the
instance chain.

With --json, standard output always holds one JSON value, and "ok" says
whether the session verified. On a failure, "error" has kind, code (the exit
status) and message; for a failed check also check, sequence and problem;
an unknown session is kind "not_found" (docs/cli.md#json-output).`,
		Example: `  ironvise verify-session 0190f1c2-7a3b-7cde-8f01-23456789abcd
  ironvise verify-session 0190f1c2-7a3b-7cde-8f01-23456789abcd --json | jq .error`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseSessionID(args[0])
			if err != nil {
				return usageError(err)
			}
			// Every failure names the session in the --json error object.
			return failedWith("", id.String(), a.verifySession(id, asJSON))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}

// verifySession verifies session id and prints the result.
func (a *app) verifySession(id uuid.UUID, asJSON bool) error {
	l, err := a.openLedger()
	if err != nil {
		return err
	}
	defer l.Close(a.ctx)
	v, err := evidence.VerifySession(a.ctx, l, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return exitCode(ExitUsage, failedWith(jsonerror.KindNotFound, "", fmt.Errorf("session %s is not in this ledger (check DATABASE_URL and ECTO_DATA_DIR; 'ironvise sessions' lists what is there)", id)))
	}
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	if asJSON {
		if err := a.printJSON(verificationJSON(v)); err != nil {
			return err
		}
	} else {
		a.printVerifyText(v)
	}
	if !v.OK {
		return exitCode(ExitDenied, nil)
	}
	return nil
}

// verifySessionJSON is the --json output of verify-session: the
// verification, whose error (when a check failed) also carries the fields
// of every --json error object (kind, code, message), next to the check,
// sequence and problem it always had.
type verifySessionJSON struct {
	*evidence.Verification
	// Error shadows the verification's own error field.
	Error *jsonerror.Detail `json:"error"`
}

func verificationJSON(v *evidence.Verification) verifySessionJSON {
	out := verifySessionJSON{Verification: v}
	if e := v.Error; e != nil {
		msg := e.Check + " check failed: " + e.Problem
		if e.Sequence != nil {
			msg = fmt.Sprintf("%s check failed at seq %d: %s", e.Check, *e.Sequence, e.Problem)
		}
		out.Error = &jsonerror.Detail{Kind: jsonerror.KindVerification, Code: ExitDenied, Message: msg,
			Check: e.Check, Sequence: e.Sequence, Problem: e.Problem}
	}
	return out
}

// parseSessionID accepts the 36-character hyphenated UUID form only.
func parseSessionID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.UUID{}, fmt.Errorf("%q is not a session id (want a UUID like 0190f1c2-7a3b-7cde-8f01-23456789abcd)", s)
	}
	return id, nil
}

// printVerifyText prints the six checks of v, then the first failure.
func (a *app) printVerifyText(v *evidence.Verification) {
	state := "not sealed"
	if v.Sealed {
		state = "sealed"
	}
	fmt.Fprintf(a.stdout, "session %s: %d events, %s, tip %s\n", v.SessionID, v.EventCount, state, v.TipHash)
	for _, name := range append(ledger.CheckNames[:], evidence.FindingCheckName) {
		switch c := v.Checks[name]; {
		case !c.OK && c.Seq >= 0:
			fmt.Fprintf(a.stdout, "  %-11s FAIL at seq %d: %s\n", name, c.Seq, c.Problem)
		case !c.OK:
			fmt.Fprintf(a.stdout, "  %-11s FAIL: %s\n", name, c.Problem)
		case c.Note != "":
			fmt.Fprintf(a.stdout, "  %-11s ok (%s)\n", name, c.Note)
		default:
			fmt.Fprintf(a.stdout, "  %-11s ok\n", name)
		}
	}
	if e := v.Error; e != nil {
		where := "not tied to one event"
		if e.Sequence != nil {
			where = fmt.Sprintf("first broken seq %d", *e.Sequence)
		}
		fmt.Fprintf(a.stdout, "verification FAILED: %s check, %s: %s\n", e.Check, where, e.Problem)
		return
	}
	fmt.Fprintf(a.stdout, "verification passed (log checked against checkpoint %d)\n", v.CheckedTreeSize)
}
