package evidence

import "errors"

// Sentinel errors. Compare with errors.Is; the wrapped text names the
// session, format or field concerned.
var (
	// ErrUnknownFormat reports a report format other than the six of
	// docs/design/ledger.md#evidence-exports.
	ErrUnknownFormat = errors.New("ironvise/evidence: unknown report format")
	// ErrMalformedCertificate reports a document that is not an .elc
	// certificate of a version this build reads; such a document is
	// invalid, never partially trusted.
	ErrMalformedCertificate = errors.New("ironvise/evidence: malformed certificate")
	// ErrNoCredential reports a session without a verifiable_credential
	// event (it did not complete, or completed before credentials were
	// issued).
	ErrNoCredential = errors.New("ironvise/evidence: session has no verifiable credential")
	// ErrInvalidCredential reports a VC-JWT that is malformed, badly
	// signed, not yet valid or expired.
	ErrInvalidCredential = errors.New("ironvise/evidence: invalid verifiable credential")
	// ErrInstanceChain reports an export request for the instance chain,
	// which is verified with verify-session rather than exported.
	ErrInstanceChain = errors.New("ironvise/evidence: the instance chain has no report or certificate")
	// ErrUnbackedFindings reports findings that cite something other than
	// observations IronVise recorded from actions it executed (a client's
	// own observation, say): no credential is issued for them.
	ErrUnbackedFindings = errors.New("ironvise/evidence: findings are not backed by observations IronVise recorded")
	// ErrUnpinned reports a verification asked for without an issuer key:
	// anyone can make a self-consistent certificate under a key of their
	// own, so an unpinned check is refused unless explicitly allowed.
	ErrUnpinned = errors.New("ironvise/evidence: no issuer key pinned: pass --issuer-key HEX or --issuer-key-file FILE (what 'ironvise issuer-key' prints, obtained over a channel you trust), or --allow-unpinned to check self-consistency only")
	// ErrUnverified reports an export refused because the session failed
	// verification (the error is an *UnverifiedError naming the check).
	ErrUnverified = errors.New("ironvise/evidence: session failed verification")
)
