package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/ledger"
)

// verifyJSON is `ironvise verify-session --json`: the API's VerifyResult
// (api.md §5.5) plus each check's detail.
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
		Long: `Verifies one session from the ledger with five separate checks (ledger.md §7):

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

Exit status: 0 when all five pass; 1 when any fails (the output names the
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
			if asJSON {
				if err := a.printVerifyJSON(&r); err != nil {
					return err
				}
			} else {
				a.printVerifyText(&r)
			}
			if !r.OK() {
				return exitCode(ExitDenied, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}

// parseSessionID accepts the 36-character hyphenated UUID form only.
func parseSessionID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.UUID{}, fmt.Errorf("%q is not a session id (want a UUID like 0190f1c2-7a3b-7cde-8f01-23456789abcd)", s)
	}
	return id, nil
}

func (a *app) printVerifyJSON(r *ledger.Report) error {
	out := verifyJSON{
		OK: r.OK(), SessionID: r.SessionID.String(), EventCount: r.EventCount, TipHash: r.TipHash.String(),
		Sealed: r.Sealed, ChainOK: r.Chain.OK, SignaturesOK: r.Signatures.OK, GoalOK: r.Goal.OK, LogOK: r.Log.OK,
		SealOK: r.Seal.OK, CheckedTreeSize: r.CheckedTreeSize, Checks: map[string]ledger.Check{},
		IssuerSigned: r.IssuerSigned, Uncovered: r.Uncovered,
	}
	for i, c := range r.Checks() {
		out.Checks[ledger.CheckNames[i]] = c
	}
	if name, c, failed := r.FirstFailure(); failed {
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

func (a *app) printVerifyText(r *ledger.Report) {
	state := "not sealed"
	if r.Sealed {
		state = "sealed"
	}
	fmt.Fprintf(a.stdout, "session %s: %d events, %s, tip %s\n", r.SessionID, r.EventCount, state, r.TipHash)
	for i, c := range r.Checks() {
		name := ledger.CheckNames[i]
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
	if name, c, failed := r.FirstFailure(); failed {
		where := "not tied to one event"
		if c.Seq >= 0 {
			where = fmt.Sprintf("first broken seq %d", c.Seq)
		}
		fmt.Fprintf(a.stdout, "verification FAILED: %s check, %s: %s\n", name, where, c.Problem)
		return
	}
	fmt.Fprintf(a.stdout, "verification passed (log checked against checkpoint %d)\n", r.CheckedTreeSize)
}
