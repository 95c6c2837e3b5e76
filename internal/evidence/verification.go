package evidence

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Verification is the result of verify-session and of the API's verify
// route (docs/api.md VerifyResult): the chain status of the five ledger
// checks and the findings check together, each check's detail by name.
// OK and Error count the findings check, after the five.
type Verification struct {
	SessionID string `json:"session_id"`
	ChainStatus
	FindingsOK   bool                    `json:"findings_ok"`
	Checks       map[string]ledger.Check `json:"checks"`
	IssuerSigned []uint64                `json:"issuer_signed"`
	Uncovered    int                     `json:"uncovered"`
}

// VerifySession runs the five ledger checks and the findings check on
// session id. The instance chain holds no findings, so its findings check
// passes. An unknown session is ledger.ErrNotFound.
func VerifySession(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (*Verification, error) {
	r, err := l.VerifySession(ctx, id)
	if err != nil {
		return nil, err
	}
	var evs []ledger.Event
	if id != ledger.InstanceSessionID {
		if evs, err = l.Events(ctx, id, 0, 0); err != nil {
			return nil, fmt.Errorf("read the events of %s: %w", id, err)
		}
	}
	return verification(&r, findingsCheckOf(id, evs)), nil
}

// findingsCheckOf is the findings check of session id's events; the
// instance chain holds no findings, so its check passes.
func findingsCheckOf(id uuid.UUID, evs []ledger.Event) ledger.Check {
	if id == ledger.InstanceSessionID {
		return ledger.Check{OK: true, Seq: -1}
	}
	return FindingsCheck(evs)
}

// verification joins a ledger report and the findings check fc.
func verification(r *ledger.Report, fc ledger.Check) *Verification {
	v := &Verification{
		SessionID: r.SessionID.String(), ChainStatus: chainStatus(r), FindingsOK: fc.OK,
		Checks: map[string]ledger.Check{FindingCheckName: fc}, IssuerSigned: r.IssuerSigned, Uncovered: r.Uncovered,
	}
	if v.IssuerSigned == nil {
		v.IssuerSigned = []uint64{}
	}
	for i, c := range r.Checks() {
		v.Checks[ledger.CheckNames[i]] = c
	}
	if !fc.OK {
		v.OK = false
		if v.Error == nil {
			v.Error = chainError(FindingCheckName, fc)
		}
	}
	return v
}
