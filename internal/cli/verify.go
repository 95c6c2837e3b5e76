package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/ledger"
)

// verifyJSON is `ironvise verify-session --json`: the API's VerifyResult
// (docs/design/api.md#verify-and-evidence) plus each check's detail.
type verifyJSON struct {
	OK              bool                    `json:"ok"`
	SessionID       string                  `json:"session_id"`
	EventCount      int                     `json:"event_count"`
	TipHash         string                  `json:"tip_hash"`
	Sealed          bool                    `json:"sealed"`
	ChainOK         bool                    `json:"chain_ok"`
	SignaturesOK    bool                    `json:"signatures_ok"`
	GoalOK          bool                    `json:"goal_ok"`
	LogOK           bool                    `json:"log_ok"`
	SealOK          bool                    `json:"seal_ok"`
	FindingsOK      bool                    `json:"findings_ok"`
	CheckedTreeSize int64                   `json:"checked_tree_size"`
	Error           *verifyError            `json:"error"`
	Checks          map[string]ledger.Check `json:"checks"`
	IssuerSigned    []uint64                `json:"issuer_signed"`
	Uncovered       int                     `json:"uncovered"`
}

type verifyError struct {
	Check    string `json:"check"`
	Sequence *int64 `json:"sequence"`
	Problem  string `json:"problem"`
}

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
instance chain.`,
		Example: `  ironvise verify-session 0190f1c2-7a3b-7cde-8f01-23456789abcd
  ironvise verify-session 0190f1c2-7a3b-7cde-8f01-23456789abcd --json | jq .error`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseSessionID(args[0])
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			l, err := a.openLedger()
			if err != nil {
				return err
			}
			defer l.Close(a.ctx)
			r, err := l.VerifySession(a.ctx, id)
			if errors.Is(err, ledger.ErrNotFound) {
				return exitCode(ExitUsage, fmt.Errorf("session %s is not in this ledger (check DATABASE_URL and ECTO_DATA_DIR; 'ironvise sessions' lists what is there)", id))
			}
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			fc, err := a.findingsCheck(l, id)
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			if asJSON {
				if err := a.printVerifyJSON(&r, fc); err != nil {
					return err
				}
			} else {
				a.printVerifyText(&r, fc)
			}
			if !r.OK() || !fc.OK {
				return exitCode(ExitDenied, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}

// findingsCheck runs the findings check of verify-session on a session
// chain (the instance chain has no findings).
func (a *app) findingsCheck(l *ledger.Ledger, id uuid.UUID) (ledger.Check, error) {
	if id == ledger.InstanceSessionID {
		return ledger.Check{OK: true, Seq: -1}, nil
	}
	evs, err := l.Events(a.ctx, id, 0, 0)
	if err != nil {
		return ledger.Check{}, fmt.Errorf("read the events of %s: %w", id, err)
	}
	return evidence.FindingsCheck(evs), nil
}

// parseSessionID accepts the 36-character hyphenated UUID form only.
func parseSessionID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.UUID{}, fmt.Errorf("%q is not a session id (want a UUID like 0190f1c2-7a3b-7cde-8f01-23456789abcd)", s)
	}
	return id, nil
}

// printVerifyJSON prints the ledger's five checks and the findings check
// fc.
func (a *app) printVerifyJSON(r *ledger.Report, fc ledger.Check) error {
	out := verifyJSON{
		OK: r.OK() && fc.OK, SessionID: r.SessionID.String(), EventCount: r.EventCount, TipHash: r.TipHash.String(),
		Sealed: r.Sealed, ChainOK: r.Chain.OK, SignaturesOK: r.Signatures.OK, GoalOK: r.Goal.OK, LogOK: r.Log.OK,
		SealOK: r.Seal.OK, FindingsOK: fc.OK, CheckedTreeSize: r.CheckedTreeSize, Checks: map[string]ledger.Check{},
		IssuerSigned: r.IssuerSigned, Uncovered: r.Uncovered,
	}
	for i, c := range r.Checks() {
		out.Checks[ledger.CheckNames[i]] = c
	}
	out.Checks[evidence.FindingCheckName] = fc
	name, c, failed := r.FirstFailure()
	if !failed && !fc.OK {
		name, c, failed = evidence.FindingCheckName, fc, true
	}
	if failed {
		e := &verifyError{Check: name, Problem: c.Problem}
		if c.Seq >= 0 {
			e.Sequence = &c.Seq
		}
		out.Error = e
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// printVerifyText prints the ledger's five checks and the findings check
// fc.
func (a *app) printVerifyText(r *ledger.Report, fc ledger.Check) {
	state := "not sealed"
	if r.Sealed {
		state = "sealed"
	}
	fmt.Fprintf(a.stdout, "session %s: %d events, %s, tip %s\n", r.SessionID, r.EventCount, state, r.TipHash)
	five := r.Checks()
	checks := append(five[:], fc)
	names := append(ledger.CheckNames[:], evidence.FindingCheckName)
	for i, c := range checks {
		name := names[i]
		switch {
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
	name, c, failed := r.FirstFailure()
	if !failed && !fc.OK {
		name, c, failed = evidence.FindingCheckName, fc, true
	}
	if failed {
		where := "not tied to one event"
		if c.Seq >= 0 {
			where = fmt.Sprintf("first broken seq %d", c.Seq)
		}
		fmt.Fprintf(a.stdout, "verification FAILED: %s check, %s: %s\n", name, where, c.Problem)
		return
	}
	fmt.Fprintf(a.stdout, "verification passed (log checked against checkpoint %d)\n", r.CheckedTreeSize)
}
