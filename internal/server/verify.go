package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/ledger"
)

// handleVerify is route 11: the five checks of
// docs/design/ledger.md#verification and the findings check
// (evidence.FindingsCheck), each reported.
func (s *Server) handleVerify(rc *reqCtx) {
	v, _, ok := sessionEvidence(s, rc, evidence.VerifySession)
	if !ok {
		return
	}
	if !v.OK {
		s.verifyFailures.Add(1)
	}
	if v.Error != nil {
		// The API's problem names its check too, for a client that shows
		// only the problem.
		v.Error.Problem = v.Error.Check + ": " + v.Error.Problem
	}
	rc.writeJSON(http.StatusOK, v)
}

// handleProof is route 18: the inclusion proof of one event in a checkpoint.
func (s *Server) handleProof(rc *reqCtx) {
	id, err := rc.sessionParam()
	if err != nil {
		rc.fail(err)
		return
	}
	seq, err := strconv.ParseUint(rc.params["seq"], 10, 63)
	if err != nil {
		rc.fail(errf(http.StatusBadRequest, "sequence %q is not a non-negative integer", rc.params["seq"]))
		return
	}
	var size int64
	if v, ok := queryFirst(rc.r, "tree_size"); ok {
		if size, err = strconv.ParseInt(v, 10, 64); err != nil || size < 1 {
			rc.fail(errf(http.StatusBadRequest, "tree_size %q is not a positive integer", v))
			return
		}
	}
	if _, err := s.sessionByID(rc, id); err != nil {
		rc.fail(err)
		return
	}
	p, err := s.ledger().InclusionProof(rc.r.Context(), id, seq, size)
	switch {
	case errors.Is(err, ledger.ErrNotCovered):
		rc.fail(&apiError{status: http.StatusConflict, msg: fmt.Sprintf("event %d of session %s is not covered by a checkpoint yet; retry shortly", seq, id), retryAfter: 1})
		return
	case errors.Is(err, ledger.ErrNotFound):
		rc.fail(errf(http.StatusNotFound, "no event %d in session %s, or no checkpoint of that tree size", seq, id))
		return
	case err != nil:
		rc.fail(err)
		return
	}
	path := make([]string, len(p.Path))
	for i, h := range p.Path {
		path[i] = h.String()
	}
	rc.writeJSON(http.StatusOK, map[string]any{
		"session_id": id.String(), "sequence": seq, "event_id": p.LogIndex + 1, "leaf_index": p.LogIndex,
		"leaf_hash": p.LeafHash.String(), "content_hash": p.EventHash.String(), "tree_size": p.TreeSize, "root_hash": p.Root.String(),
		"audit_path": path, "checkpoint": toCheckpoint(&p.Checkpoint, s.ledger().Origin()),
	})
}

// handleLatestCheckpoint is route 19.
func (s *Server) handleLatestCheckpoint(rc *reqCtx) {
	cp, err := s.ledger().LatestCheckpoint(rc.r.Context())
	if err != nil {
		rc.fail(err)
		return
	}
	out := toCheckpoint(&cp, s.ledger().Origin())
	rc.writeJSON(http.StatusOK, out)
}

// evidenceErr maps the evidence package's errors: a missing session or
// credential is a 404.
func evidenceErr(err error, id uuid.UUID) error {
	switch {
	case errors.Is(err, ledger.ErrNotFound), errors.Is(err, evidence.ErrInstanceChain):
		return errf(http.StatusNotFound, "session %s not found", id)
	case errors.Is(err, evidence.ErrNoCredential):
		return errf(http.StatusNotFound, "session %s has no verifiable credential (one is issued when a session completes)", id)
	}
	return err
}

// sessionEvidence builds what an evidence route returns for the
// route's session; ok false means the failure is already answered.
func sessionEvidence[T any](s *Server, rc *reqCtx, build func(context.Context, *ledger.Ledger, uuid.UUID) (T, error)) (v T, id uuid.UUID, ok bool) {
	id, err := rc.sessionParam()
	if err == nil {
		_, err = s.sessionByID(rc, id)
	}
	if err != nil {
		rc.fail(err)
		return v, id, false
	}
	if v, err = build(rc.r.Context(), s.ledger(), id); err != nil {
		rc.fail(evidenceErr(err, id))
		return v, id, false
	}
	return v, id, true
}

// handleCompliance is route 12.
func (s *Server) handleCompliance(rc *reqCtx) {
	if c, _, ok := sessionEvidence(s, rc, evidence.Compliance); ok {
		rc.writeJSON(http.StatusOK, c)
	}
}

// handleVC is route 13.
func (s *Server) handleVC(rc *reqCtx) {
	if vc, _, ok := sessionEvidence(s, rc, evidence.SessionVC); ok {
		rc.writeJSON(http.StatusOK, vc)
	}
}

// handleVCVerify is route 14: a credential that fails verification is a
// 200 with valid false and the reason.
func (s *Server) handleVCVerify(rc *reqCtx) {
	v, _, ok := sessionEvidence(s, rc, evidence.VerifySessionVC)
	if !ok {
		return
	}
	if !v.Valid {
		s.verifyFailures.Add(1)
	}
	rc.writeJSON(http.StatusOK, v)
}

// handleCertificate is route 20: the .elc of any session, sealed or not.
func (s *Server) handleCertificate(rc *reqCtx) {
	b, id, ok := sessionEvidence(s, rc, evidence.BuildCertificate)
	if !ok {
		return
	}
	rc.w.Header().Set("Content-Disposition", `attachment; filename="`+id.String()+`.elc"`)
	rc.writeRawJSON(http.StatusOK, b)
}

// handleReport is route 21: the JSON report.
func (s *Server) handleReport(rc *reqCtx) {
	rep, _, ok := sessionEvidence(s, rc, evidence.BuildReport)
	if !ok {
		return
	}
	var buf bytes.Buffer
	if err := evidence.Render(rep, evidence.FormatJSON, &buf); err != nil {
		rc.fail(err)
		return
	}
	rc.writeRawJSON(http.StatusOK, bytes.TrimSpace(buf.Bytes()))
}
