package evidence

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// UnverifiedError reports a session whose verification failed, so its
// evidence was not exported: a report or certificate signed over edited
// rows would lend the issuer's name to them. Check names the failed check
// of verify-session (chain, signatures, goal, log, seal or findings).
type UnverifiedError struct {
	Session uuid.UUID
	Check   string
	// Seq is the first broken sequence, -1 when the problem is not tied
	// to one event.
	Seq     int64
	Problem string
}

// Error implements error.
func (e *UnverifiedError) Error() string {
	where := ""
	if e.Seq >= 0 {
		where = fmt.Sprintf(" at seq %d", e.Seq)
	}
	fix := "the ledger was changed outside IronVise: restore it from a backup or investigate who changed it"
	if e.Check == FindingCheckName {
		fix = "its findings are not backed by what IronVise observed, so no evidence is issued for them"
	}
	return fmt.Sprintf("evidence: session %s failed the %s check%s: %s; nothing was exported (%s; 'ironvise verify-session %s' shows every check)",
		e.Session, e.Check, where, e.Problem, fix, e.Session)
}

// Unwrap returns ErrUnverified.
func (e *UnverifiedError) Unwrap() error { return ErrUnverified }

// verifyForExport runs the checks of verify-session on session id and
// returns an *UnverifiedError naming the first that fails.
func verifyForExport(ctx context.Context, l *ledger.Ledger, id uuid.UUID) error {
	if id == ledger.InstanceSessionID {
		return fmt.Errorf("evidence: export: %w", ErrInstanceChain)
	}
	v, err := VerifySession(ctx, l, id)
	if err != nil {
		return fmt.Errorf("evidence: verify before export: %w", err)
	}
	if e := v.Error; e != nil {
		seq := int64(-1)
		if e.Sequence != nil {
			seq = *e.Sequence
		}
		return &UnverifiedError{Session: id, Check: e.Check, Seq: seq, Problem: e.Problem}
	}
	return nil
}
