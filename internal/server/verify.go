package server

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// handleVerify is route 11: the five checks of ledger.md §7, each reported.
func (s *Server) handleVerify(rc *reqCtx) {
	id, err := rc.sessionParam()
	if err != nil {
		rc.fail(err)
		return
	}
	if _, err := s.sessionByID(rc, id); err != nil {
		rc.fail(err)
		return
	}
	rep, err := s.ledger().VerifySession(rc.r.Context(), id)
	if err != nil {
		rc.fail(err)
		return
	}
	if !rep.OK() {
		s.verifyFailures.Add(1)
	}
	var errObj any
	if name, c, bad := rep.FirstFailure(); bad {
		var seq any
		if c.Seq >= 0 {
			seq = c.Seq
		}
		errObj = map[string]any{"sequence": seq, "problem": name + ": " + c.Problem, "check": name}
	}
	checks := map[string]ledger.Check{}
	for i, c := range rep.Checks() {
		checks[ledger.CheckNames[i]] = c
	}
	rc.writeJSON(http.StatusOK, map[string]any{
		"ok": rep.OK(), "session_id": id.String(), "event_count": rep.EventCount, "tip_hash": rep.TipHash.String(), "sealed": rep.Sealed,
		"chain_ok": rep.Chain.OK, "signatures_ok": rep.Signatures.OK, "goal_ok": rep.Goal.OK, "log_ok": rep.Log.OK, "seal_ok": rep.Seal.OK,
		"checked_tree_size": rep.CheckedTreeSize, "uncovered": rep.Uncovered, "issuer_signed": nonNilSeqs(rep.IssuerSigned),
		"error": errObj, "checks": checks,
	})
}

func nonNilSeqs(s []uint64) []uint64 {
	if s == nil {
		return []uint64{}
	}
	return s
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

// handleCompliance is route 12.
func (s *Server) handleCompliance(rc *reqCtx) {
	id, err := rc.sessionParam()
	if err != nil {
		rc.fail(err)
		return
	}
	sess, err := s.sessionByID(rc, id)
	if err != nil {
		rc.fail(err)
		return
	}
	ctx := rc.r.Context()
	evs, err := s.ledger().Events(ctx, id, 0, 0)
	if err != nil {
		rc.fail(err)
		return
	}
	cp, err := s.ledger().LatestCheckpoint(ctx)
	if err != nil {
		rc.fail(err)
		return
	}
	list := make([]map[string]any, len(evs))
	tip := ""
	for i := range evs {
		h := evs[i].Hash.String()
		list[i] = map[string]any{"sequence": evs[i].Seq, "type": evs[i].Type, "content_hash": h, "payload_hash": h}
		tip = h
	}
	rc.writeJSON(http.StatusOK, map[string]any{
		"session_id": id.String(), "event_count": len(evs), "policy_hash": optStr(sess.PolicyHash), "generated_at": ts(time.Now()),
		"sealed": sess.Sealed(), "tip_hash": tip, "events": list, "checkpoint": toCheckpoint(&cp, s.ledger().Origin()),
	})
}

// latestVC returns the newest verifiable_credential of a session.
func (s *Server) latestVC(rc *reqCtx) (*ledger.Session, []ledger.Event, string, error) {
	id, err := rc.sessionParam()
	if err != nil {
		return nil, nil, "", err
	}
	sess, err := s.sessionByID(rc, id)
	if err != nil {
		return nil, nil, "", err
	}
	evs, err := s.ledger().Events(rc.r.Context(), id, 0, 0)
	if err != nil {
		return nil, nil, "", err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type != ledger.TypeVerifiableCredential {
			continue
		}
		var p struct {
			VCJWT string `json:"vc_jwt"`
		}
		if json.Unmarshal(evs[i].Payload, &p) == nil && p.VCJWT != "" {
			return sess, evs, p.VCJWT, nil
		}
	}
	return nil, nil, "", errf(http.StatusNotFound, "session %s has no verifiable credential (one is issued when a session completes)", id)
}

// handleVC is route 13.
func (s *Server) handleVC(rc *reqCtx) {
	sess, evs, jwt, err := s.latestVC(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	hashes := make([]ledger.Hash, len(evs))
	for i := range evs {
		hashes[i] = evs[i].Hash
	}
	claims, _ := jwtClaims(jwt)
	parts := strings.Split(jwt, ".")
	rc.writeJSON(http.StatusOK, map[string]any{
		"vc_jwt": jwt, "vc_payload": claims, "merkle_root": merkleRoot(hashes).String(), "event_count": len(evs),
		"policy_hash": optStr(sess.PolicyHash), "proof": len(parts) == 3 && parts[2] != "",
	})
}

// handleVCVerify is route 14.
func (s *Server) handleVCVerify(rc *reqCtx) {
	_, _, jwt, err := s.latestVC(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	var claims map[string]any
	if s.opts.Evidence != nil {
		claims, err = s.opts.Evidence.VerifyCredential(rc.r.Context(), s.ledger(), jwt)
	} else {
		claims, err = verifyJWT(jwt, s.ledger().IssuerPublicKey(), time.Now())
	}
	if err != nil {
		rc.writeJSON(http.StatusOK, map[string]any{"valid": false, "reason": err.Error()})
		return
	}
	rc.writeJSON(http.StatusOK, map[string]any{"valid": true, "signature_verified": true, "vc_jwt": jwt, "vc_payload": claims})
}

// jwtClaims decodes the claims of a compact JWT without verifying it.
func jwtClaims(jwt string) (map[string]any, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a compact JWT (expected three dot-separated parts)")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("the JWT payload is not base64url")
	}
	var claims map[string]any
	if err := json.Unmarshal(b, &claims); err != nil || claims == nil {
		return nil, errors.New("the JWT payload is not a JSON object")
	}
	return claims, nil
}

// verifyJWT checks an EdDSA compact JWT against the issuer key and its
// expiry.
func verifyJWT(jwt string, pub ed25519.PublicKey, now time.Time) (map[string]any, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return nil, errors.New("bad structure: not a compact JWT")
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, errors.New("bad structure: header is not base64url")
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(hb, &hdr) != nil || hdr.Alg != "EdDSA" {
		return nil, errors.New("bad structure: the header must name alg EdDSA")
	}
	claims, err := jwtClaims(jwt)
	if err != nil {
		return nil, fmt.Errorf("bad structure: %w", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		return nil, errors.New("bad signature: not signed by this instance's issuer key")
	}
	if exp, ok := claims["exp"].(float64); ok && now.Unix() >= int64(exp) {
		return nil, errors.New("expired")
	}
	return claims, nil
}

// merkleRoot is the RFC 6962 root over a list of content hashes (leaf =
// H(0x00 ‖ hash), node = H(0x01 ‖ left ‖ right)); the empty tree's root is
// H("").
func merkleRoot(hashes []ledger.Hash) ledger.Hash {
	if len(hashes) == 0 {
		return sha256.Sum256(nil)
	}
	if len(hashes) == 1 {
		return ledger.LeafHash(hashes[0])
	}
	k := 1
	for k*2 < len(hashes) {
		k *= 2
	}
	l, r := merkleRoot(hashes[:k]), merkleRoot(hashes[k:])
	var buf [65]byte
	buf[0] = 1
	copy(buf[1:], l[:])
	copy(buf[33:], r[:])
	return sha256.Sum256(buf[:])
}

// handleCertificate is route 20.
func (s *Server) handleCertificate(rc *reqCtx) {
	id, err := s.evidenceSession(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	b, err := s.opts.Evidence.Certificate(rc.r.Context(), s.ledger(), id)
	if err != nil {
		rc.fail(err)
		return
	}
	rc.w.Header().Set("Content-Disposition", `attachment; filename="`+id.String()+`.elc"`)
	rc.writeRawJSON(http.StatusOK, b)
}

// handleReport is route 21.
func (s *Server) handleReport(rc *reqCtx) {
	id, err := s.evidenceSession(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	b, err := s.opts.Evidence.Report(rc.r.Context(), s.ledger(), id)
	if err != nil {
		rc.fail(err)
		return
	}
	rc.writeRawJSON(http.StatusOK, b)
}

func (s *Server) evidenceSession(rc *reqCtx) (uuid.UUID, error) {
	id, err := rc.sessionParam()
	if err != nil {
		return uuid.Nil, err
	}
	if _, err := s.sessionByID(rc, id); err != nil {
		return uuid.Nil, err
	}
	if s.opts.Evidence == nil {
		return uuid.Nil, errf(http.StatusServiceUnavailable, "evidence exports are not available in this build")
	}
	return id, nil
}
