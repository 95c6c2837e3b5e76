// Package evidence makes a session's ledger record portable
// (docs/design/ledger.md#evidence-exports): reports in six formats, the
// self-contained `.elc` audit certificate with its offline five-pillar
// verification, and the W3C verifiable credential (VC-JWT, EdDSA) issued when
// a session completes.
//
// # Usage
//
//	rep, err := evidence.BuildReport(ctx, l, id)        // session, findings, verdict summary, chain status
//	err = evidence.Render(rep, evidence.FormatSARIF, w)   // json, sarif, html, github_actions, gitlab_codequality
//	gate, err := evidence.Export(ctx, l, id, format, w)   // all six formats, certificate included
//
//	elc, err := evidence.BuildCertificate(ctx, l, id)   // one issuer-signed JSON document
//	res, err := evidence.VerifyCertificate(elc, pinnedIssuerKey) // offline: no database, no network
//	if !res.Valid { … res.Pillars[i].Problem … }
//
//	jwt, err := evidence.IssueVC(ctx, l, id)            // or Credentials{Ledger: l} as the agent's hook
//	claims, err := evidence.VerifyVC(jwt, pinnedIssuerKey)
//
//	c, err := evidence.Compliance(ctx, l, id)           // the API's Compliance object (docs/design/api.md#verify-and-evidence)
//	vc, err := evidence.SessionVC(ctx, l, id)           // the API's VC object
//	v, err := evidence.VerifySessionVC(ctx, l, id)      // the API's VcVerify object
//
// # The certificate
//
// A certificate is {"certificate": BODY, "signature": SIG}. BODY holds the
// session header, every event exactly as stored (payload bytes, hashes,
// signatures), the session's key rows (genesis key and rotations), the
// signed checkpoint that covers the events with one multi-leaf RFC 6962
// inclusion proof for all of them (multiproof.go), the checkpoint the seal
// names, the findings and the policy hash. SIG is Ed25519 by the issuer
// key over
//
//	SHA-256("ironvise/elc/v1" ‖ 0x00 ‖ JCS(BODY))
//
// where JCS is RFC 8785, so re-indenting a certificate does not break it.
// Verification re-runs the ledger's own checks ([ledger.VerifyEvents]) on
// the certificate's data, so the offline verifier and `verify-session`
// apply one set of hash, signature and Merkle rules, and reports five
// pillars separately: issuer signature; hash chain (with seal
// completeness); event signatures and key rotations; Merkle inclusion in
// the signed checkpoint; goal/policy binding and findings evidence. A
// missing signature is a failure, never a pass.
//
// # Limitations
//
// Without a pinned issuer key a certificate can only prove that it is
// self-consistent: anyone can make a consistent certificate under a key of
// their own. Verifiers must pin the issuer's public key (`ironvise
// issuer-key` prints it) and the result says whether it was pinned. A
// certificate of a running session covers the events up to the newest
// checkpoint only. Certificates are held in memory whole (a 10,000-event
// session is about 5 MB). The credential signer takes the issuer seed from
// its typed text form for each signature, because ledger.SigningKey signs
// only 32-byte hashes and JWS EdDSA signs the whole signing input.
package evidence
