package evidence

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/strictjson"
)

// MaxCertificateBytes is the default bound on the certificate a verifier
// reads: a 10,000-event session is about 5 MB, so 64 MiB holds well over
// 100,000 events. Verifying a document costs a few times its size in
// memory, so the bound is what a stranger's file can cost an auditor;
// larger certificates need the verifiers' --max-bytes (at most
// MaxCertificateBytesLimit).
const MaxCertificateBytes = 64 << 20

// MaxCertificateBytesLimit is the most --max-bytes accepts.
const MaxCertificateBytesLimit = 1 << 30

// The five pillars of docs/design/ledger.md#evidence-exports, in report
// order.
const (
	PillarIssuer     = "issuer_signature"
	PillarChain      = "hash_chain"
	PillarSignatures = "event_signatures"
	PillarInclusion  = "merkle_inclusion"
	PillarBinding    = "binding_and_findings"
)

// PillarNames lists the pillars in report order.
var PillarNames = [5]string{PillarIssuer, PillarChain, PillarSignatures, PillarInclusion, PillarBinding}

// PillarTitle returns the human name of a pillar.
func PillarTitle(name string) string {
	switch name {
	case PillarIssuer:
		return "issuer signature"
	case PillarChain:
		return "hash chain"
	case PillarSignatures:
		return "event signatures and key rotations"
	case PillarInclusion:
		return "Merkle inclusion in the signed checkpoint"
	case PillarBinding:
		return "goal/policy binding and findings evidence"
	case PillarConsistency:
		return "log consistent with your checkpoint"
	case PillarEnclave:
		return "guard enclave attestation"
	}
	return name
}

// Pillar is the outcome of one pillar.
type Pillar struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Sequence is the first broken event sequence, when the problem is
	// tied to one.
	Sequence *int64 `json:"sequence"`
	Problem  string `json:"problem,omitempty"`
	Note     string `json:"note,omitempty"`
}

// CertificateResult is the outcome of verifying a certificate. Valid is
// true only when all five pillars pass, and the sixth (PillarEnclave) when
// the session's genesis records a guard enclave.
type CertificateResult struct {
	Valid     bool   `json:"valid"`
	SessionID string `json:"session_id"`
	Goal      string `json:"goal"`
	Status    string `json:"status"`
	Sealed    bool   `json:"sealed"`
	IssuedAt  string `json:"issued_at"`
	// EventCount counts the events in the certificate; TipHash is the last.
	EventCount int    `json:"event_count"`
	TipHash    string `json:"tip_hash"`
	// TreeSize is the size of the checkpoint the events are proven in.
	TreeSize int64 `json:"tree_size"`
	// IssuerKeyID names the key the certificate was checked against;
	// IssuerPinned says whether the caller supplied it.
	IssuerKeyID  string `json:"issuer_key_id"`
	IssuerPinned bool   `json:"issuer_pinned"`
	// CertificateKeyID is the key id the certificate names for its issuer;
	// PinnedKeyID the id of the key the caller pinned (empty when none), so
	// a reader sees both side by side.
	CertificateKeyID string `json:"certificate_key_id"`
	PinnedKeyID      string `json:"pinned_key_id,omitempty"`
	Findings         int    `json:"findings"`
	// ClientEvents lists the events a client appended through the API
	// (from their signed origin, or inferred for legacy events): recorded,
	// but never evidence of anything IronVise did.
	ClientEvents []ClientEvent `json:"client_events"`
	Pillars      []Pillar      `json:"pillars"`
	// Consistency is the check against the auditor's own checkpoint
	// (VerifyOptions.Checkpoint); nil when none was given.
	Consistency *Pillar `json:"consistency,omitempty"`
}

// FirstFailure returns the first failed pillar (or the consistency check),
// and false when all passed.
func (r *CertificateResult) FirstFailure() (Pillar, bool) {
	for _, p := range r.Pillars {
		if !p.OK {
			return p, true
		}
	}
	if r.Consistency != nil && !r.Consistency.OK {
		return *r.Consistency, true
	}
	return Pillar{}, false
}

// Pillar returns the pillar called name.
func (r *CertificateResult) Pillar(name string) Pillar {
	for _, p := range r.Pillars {
		if p.Name == name {
			return p
		}
	}
	return Pillar{Name: name}
}

func passP(name, note string) Pillar { return Pillar{Name: name, OK: true, Note: note} }

func failP(name string, seq int64, format string, args ...any) Pillar {
	p := Pillar{Name: name, Problem: fmt.Sprintf(format, args...)}
	if seq >= 0 {
		p.Sequence = &seq
	}
	return p
}

func fromCheck(name string, c ledger.Check) Pillar {
	if c.OK {
		return passP(name, c.Note)
	}
	return failP(name, c.Seq, "%s", c.Problem)
}

// malformed returns the result of a document that could not be read: every
// pillar fails, the first with the reason.
func malformed(err error) (*CertificateResult, error) {
	r := &CertificateResult{Pillars: make([]Pillar, len(PillarNames))}
	for i, n := range PillarNames {
		r.Pillars[i] = failP(n, -1, "not checked: the document is not a readable certificate")
	}
	r.Pillars[0].Problem = err.Error()
	return r, fmt.Errorf("evidence: verify certificate: %w", err)
}

// ParseCertificate reads an .elc document strictly: valid I-JSON (no
// duplicate member names at any depth, valid UTF-8, safe numbers), no
// unknown fields, this build's format version. It does not verify
// anything; it returns the body, its canonical bytes (what the issuer
// signed) and the signature (nil when absent).
func ParseCertificate(data []byte) (*Certificate, []byte, *CertSignature, error) {
	canon, err := canonicalDocument(data, MaxCertificateBytes)
	if err != nil {
		return nil, nil, nil, err
	}
	return decodeCertificate(canon)
}

// canonicalDocument bounds and canonicalises a certificate document.
// Canonicalize rejects duplicate member names, invalid UTF-8 and unsafe
// numbers: a document two parsers could read differently must never
// verify. Its output also contains the canonical body, which is what the
// issuer signed.
func canonicalDocument(data []byte, maxBytes int) ([]byte, error) {
	if len(data) > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than the limit of %d (a certificate from a trusted issuer that is this large can be read with --max-bytes)", ErrMalformedCertificate, len(data), maxBytes)
	}
	canon, err := ledger.Canonicalize(data)
	if err != nil {
		return nil, fmt.Errorf("%w: not a single valid JSON document: %w", ErrMalformedCertificate, err)
	}
	return canon, nil
}

// decodeCertificate decodes a canonical certificate document strictly.
func decodeCertificate(canon []byte) (*Certificate, []byte, *CertSignature, error) {
	var doc struct {
		Certificate *Certificate   `json:"certificate"`
		Signature   *CertSignature `json:"signature"`
	}
	if err := strictDecode(canon, &doc); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", ErrMalformedCertificate, err)
	}
	if doc.Certificate == nil {
		return nil, nil, nil, fmt.Errorf("%w: no certificate member", ErrMalformedCertificate)
	}
	switch doc.Certificate.Format {
	case CertificateFormatVersion:
		// v2 labels every event with its origin.
		for i := range doc.Certificate.Events {
			if doc.Certificate.Events[i].Origin == "" {
				return nil, nil, nil, fmt.Errorf("%w: event %d has no origin label (format %s labels every event)", ErrMalformedCertificate, doc.Certificate.Events[i].Seq, CertificateFormatVersion)
			}
		}
	case CertificateFormatV1:
		for i := range doc.Certificate.Events {
			if doc.Certificate.Events[i].Origin != "" {
				return nil, nil, nil, fmt.Errorf("%w: event %d has an origin label, which format %s does not have", ErrMalformedCertificate, doc.Certificate.Events[i].Seq, CertificateFormatV1)
			}
		}
	default:
		return nil, nil, nil, fmt.Errorf("%w: format %q (this build reads %q and %q)", ErrMalformedCertificate, doc.Certificate.Format, CertificateFormatVersion, CertificateFormatV1)
	}
	body, ok := canonicalBody(canon, doc.Signature != nil)
	if !ok {
		return nil, nil, nil, fmt.Errorf("%w: cannot locate the certificate body", ErrMalformedCertificate)
	}
	return doc.Certificate, body, doc.Signature, nil
}

// canonicalBody cuts the certificate body out of the canonical document.
// JCS sorts members, so the document is {"certificate":BODY} optionally
// followed by ,"signature":SIG before the final brace; the strict decode
// has already refused any other member. A signature object holds only
// strings and the body ends with its own brace, so the last
// `,"signature":` is the top-level one when a signature is present.
func canonicalBody(canon []byte, signed bool) ([]byte, bool) {
	const head, sigKey, nullSig = `{"certificate":`, `,"signature":`, `,"signature":null}`
	if !bytes.HasPrefix(canon, []byte(head)) || !bytes.HasSuffix(canon, []byte("}")) {
		return nil, false
	}
	end := len(canon) - 1
	switch {
	case signed:
		end = bytes.LastIndex(canon, []byte(sigKey))
	case bytes.HasSuffix(canon, []byte(nullSig)):
		end = len(canon) - len(nullSig)
	}
	if end < len(head) {
		return nil, false
	}
	return canon[len(head):end], true
}

// maxDocumentDepth bounds the nesting of a certificate or credential:
// event payloads nest up to the ledger's 512 levels inside it.
const maxDocumentDepth = 600

// strictDecode decodes an untrusted document into v with the strict rules
// of internal/strictjson: no duplicate or unknown member, names matched
// exactly, nothing after the value.
func strictDecode(data []byte, v any) error { return strictjson.Unmarshal(data, maxDocumentDepth, v) }

// VerifyCertificate verifies an .elc document offline and reports the five
// pillars. pinned is the issuer public key the caller trusts; nil trusts
// the key the certificate names, which proves only self-consistency (the
// result says so). The error is non-nil only when the document cannot be
// read at all; the result is then invalid too.
func VerifyCertificate(data []byte, pinned ed25519.PublicKey) (*CertificateResult, error) {
	return VerifyCertificateWith(data, pinned, VerifyOptions{})
}

// VerifyOptions are the optional inputs of VerifyCertificateWith.
type VerifyOptions struct {
	// MaxBytes bounds the document (0: MaxCertificateBytes).
	MaxBytes int
	// Checkpoint is a signed checkpoint note of the issuer's log that the
	// auditor kept from earlier (`ironvise checkpoint latest`). When set,
	// the certificate is valid only if its log and that checkpoint's are
	// one history (its consistency proof checks), which catches a log
	// rolled back or forked since.
	Checkpoint []byte
	// EnclaveRoots replaces the pinned AWS Nitro root certificate when the
	// sixth pillar verifies a remote enclave's attestation. Tests only:
	// no command or variable sets it, so a certificate outside tests is
	// always checked against the pinned root.
	EnclaveRoots *x509.CertPool
}

// VerifyCertificateWith is VerifyCertificate with options.
func VerifyCertificateWith(data []byte, pinned ed25519.PublicKey, opts VerifyOptions) (*CertificateResult, error) {
	if opts.MaxBytes == 0 {
		opts.MaxBytes = MaxCertificateBytes
	}
	canon, err := canonicalDocument(data, opts.MaxBytes)
	if err != nil {
		return malformed(err)
	}
	if pinned != nil {
		if res := signatureFirst(canon, pinned); res != nil {
			if opts.Checkpoint != nil {
				p := failP(PillarConsistency, -1, "not checked: the issuer signature does not verify with the pinned key")
				res.Consistency = &p
			}
			return res, nil
		}
	}
	c, body, sig, err := decodeCertificate(canon)
	if err != nil {
		return malformed(err)
	}
	res := verifyParsed(c, body, sig, pinned, opts.EnclaveRoots)
	if opts.Checkpoint != nil {
		trusted := pinned
		if trusted == nil {
			trusted = ed25519.PublicKey(c.Issuer.PublicKey)
		}
		p := checkConsistency(c, trusted, opts.Checkpoint)
		res.Consistency = &p
		res.Valid = res.Valid && p.OK
	}
	return res, nil
}

// PillarConsistency names the check of VerifyOptions.Checkpoint.
const PillarConsistency = "log_consistency"

// checkConsistency checks that the auditor's checkpoint note (signed by
// issuer) and the certificate's checkpoint are one history.
func checkConsistency(c *Certificate, issuer ed25519.PublicKey, auditorNote []byte) Pillar {
	if len(issuer) != ed25519.PublicKeySize {
		return failP(PillarConsistency, -1, "no issuer key to check your checkpoint with")
	}
	theirs, err := ledger.ParseCheckpointNote(auditorNote, ledger.OriginPrefix+ledger.KeyID(issuer), issuer)
	if err != nil {
		return failP(PillarConsistency, -1, "your checkpoint: %v", err)
	}
	m, n := theirs.TreeSize, c.Checkpoint.TreeSize
	if m == n {
		if theirs.Root != c.Checkpoint.RootHash {
			return failP(PillarConsistency, -1, "your checkpoint %d has root %s, the certificate's checkpoint of the same size has %s: the issuer signed two different logs (a fork)", m, theirs.Root, c.Checkpoint.RootHash)
		}
		return passP(PillarConsistency, fmt.Sprintf("the certificate's checkpoint is your checkpoint %d", m))
	}
	cs := c.Consistency
	if cs == nil || cs.TreeSize != m || cs.RootHash != theirs.Root {
		return failP(PillarConsistency, -1, "the certificate carries no consistency proof for your checkpoint %d (root %s): ask the operator for a certificate exported with 'ironvise report ID --format certificate --checkpoint FILE', FILE being your checkpoint", m, theirs.Root)
	}
	if m < n {
		err = ledger.VerifyConsistency(cs.Hashes, m, theirs.Root, n, c.Checkpoint.RootHash)
	} else {
		err = ledger.VerifyConsistency(cs.Hashes, n, c.Checkpoint.RootHash, m, theirs.Root)
	}
	if err != nil {
		return failP(PillarConsistency, -1, "the log of the certificate's checkpoint %d and your checkpoint %d are not one history (rolled back or forked): %v", n, m, err)
	}
	if m < n {
		return passP(PillarConsistency, fmt.Sprintf("the log of checkpoint %d extends your checkpoint %d", n, m))
	}
	return passP(PillarConsistency, fmt.Sprintf("your checkpoint %d extends the certificate's checkpoint %d", m, n))
}

// signatureFirst returns the invalid result of a canonical document whose
// issuer signature does not verify with pinned, and nil when it does or
// when the document is not of the form {"certificate":BODY,"signature":SIG}
// (the full verification then runs and checks everything again, or
// reports the document malformed). It only ever rejects: a document it
// lets through is decoded strictly like any other.
func signatureFirst(canon []byte, pinned ed25519.PublicKey) *CertificateResult {
	reject := func(format string, args ...any) *CertificateResult {
		r := &CertificateResult{IssuerPinned: true, PinnedKeyID: ledger.KeyID(pinned), ClientEvents: []ClientEvent{}}
		r.Pillars = []Pillar{failP(PillarIssuer, -1, format, args...)}
		for _, n := range PillarNames[1:] {
			r.Pillars = append(r.Pillars, failP(n, -1, "not checked: the issuer signature does not verify with the pinned key, so nothing in the document is trusted"))
		}
		return r
	}
	const head, sigKey = `{"certificate":`, `,"signature":`
	if !bytes.HasPrefix(canon, []byte(head)) || len(canon) < len(head)+2 || canon[len(head)] != '{' {
		return nil
	}
	end := objectEnd(canon, len(head))
	if end < 0 {
		return nil
	}
	rest := canon[end:]
	switch {
	case bytes.Equal(rest, []byte("}")), bytes.Equal(rest, []byte(sigKey+"null}")):
		return reject("not signed: the certificate carries no issuer signature")
	case !bytes.HasPrefix(rest, []byte(sigKey+"{")) || objectEnd(rest, len(sigKey)) != len(rest)-1:
		return nil
	}
	var sig CertSignature
	if err := strictDecode(rest[len(sigKey):len(rest)-1], &sig); err != nil {
		return nil
	}
	d := certDigest(canon[len(head):end])
	if len(sig.Value) != ed25519.SignatureSize || !ed25519.Verify(pinned, d[:], sig.Value) {
		return reject("the issuer signature does not verify with the pinned key %s: the certificate was not issued by the key you trust, or it was changed after it was signed", ledger.KeyID(pinned))
	}
	return nil
}

// objectEnd returns the index just past the JSON object that starts at
// doc[at] ('{'), or -1. doc is canonical JSON, so strings hold no raw
// control characters and every quote inside one is escaped.
func objectEnd(doc []byte, at int) int {
	depth := 0
	for i := at; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

func verifyParsed(c *Certificate, body []byte, sig *CertSignature, pinned ed25519.PublicKey, enclaveRoots *x509.CertPool) *CertificateResult {
	res := &CertificateResult{
		SessionID: c.Session.ID, Goal: c.Session.Goal, Status: c.Session.Status, Sealed: c.Session.SealedAt != nil,
		IssuedAt: c.IssuedAt, EventCount: len(c.Events), TreeSize: c.Checkpoint.TreeSize, Findings: len(c.Findings),
		IssuerPinned: pinned != nil, ClientEvents: []ClientEvent{},
	}
	if n := len(c.Events); n > 0 {
		res.TipHash = c.Events[n-1].Hash.String()
	}
	issuer, p1 := checkIssuer(c, body, sig, pinned)
	res.IssuerKeyID = ledger.KeyID(issuer)
	if len(c.Issuer.PublicKey) == ed25519.PublicKeySize {
		res.CertificateKeyID = ledger.KeyID(ed25519.PublicKey(c.Issuer.PublicKey))
	}
	if pinned != nil {
		res.PinnedKeyID = ledger.KeyID(pinned)
	}
	in, problem, seq := verifyInput(c, issuer)
	if problem != "" {
		// The certificate's data cannot even be put into ledger form:
		// nothing past the issuer signature can be trusted.
		res.Pillars = []Pillar{p1}
		for _, n := range PillarNames[1:] {
			res.Pillars = append(res.Pillars, failP(n, seq, "%s", problem))
		}
		return res
	}
	// The events' leaves and the proof's gap hashes give a tree head; the
	// log check then compares it with the signed checkpoint's root.
	root, proofErr := multiRoot(&c.InclusionProof, in.Events)
	in.StoredRoot = &root
	r := ledger.VerifyEvents(in)

	p2 := fromCheck(PillarChain, r.Chain)
	if p2.OK {
		p2 = fromCheck(PillarChain, r.Seal)
	}
	if p2.OK && c.Session.EventCount != len(c.Events) {
		p2 = failP(PillarChain, -1, "the header counts %d events, the certificate holds %d", c.Session.EventCount, len(c.Events))
	}
	if p2.OK && !res.Sealed {
		p2.Note = fmt.Sprintf("session not sealed: the certificate covers its first %d events", len(c.Events))
	}

	p3 := fromCheck(PillarSignatures, r.Signatures)

	var p4 Pillar
	cpErr := ledger.VerifyCheckpoint(in.Checkpoint, in.Origin, issuer)
	switch {
	case cpErr != nil:
		p4 = failP(PillarInclusion, -1, "checkpoint %d: %v", c.Checkpoint.TreeSize, cpErr)
	case c.InclusionProof.TreeSize != c.Checkpoint.TreeSize:
		p4 = failP(PillarInclusion, -1, "the inclusion proof is for tree size %d, the checkpoint is %d", c.InclusionProof.TreeSize, c.Checkpoint.TreeSize)
	case proofErr != nil:
		p4 = failP(PillarInclusion, -1, "inclusion proof: %v", proofErr)
	case root != c.Checkpoint.RootHash:
		p4 = failP(PillarInclusion, -1, "the events and the proof's %d subtree hashes give root %s for tree size %d, the signed checkpoint says %s: an event or a proof hash was changed",
			len(c.InclusionProof.Nodes), root, c.Checkpoint.TreeSize, c.Checkpoint.RootHash)
	default:
		p4 = fromCheck(PillarInclusion, r.Log)
		if p4.OK && r.Uncovered > 0 {
			p4 = failP(PillarInclusion, -1, "%d event(s) are not covered by checkpoint %d", r.Uncovered, c.Checkpoint.TreeSize)
		}
		if p4.OK {
			p4.Note = fmt.Sprintf("%d events proven in checkpoint %d (root %s) with %d subtree hashes", len(c.Events), c.Checkpoint.TreeSize, c.Checkpoint.RootHash, len(c.InclusionProof.Nodes))
		}
	}

	p5 := fromCheck(PillarBinding, r.Goal)
	if p5.OK {
		p5 = checkBinding(c, in.Events)
	}
	res.ClientEvents = clientEvents(in.Events, c.Session.AgentLoop)
	res.Pillars = []Pillar{p1, p2, p3, p4, p5}
	res.Valid = p1.OK && p2.OK && p3.OK && p4.OK && p5.OK
	// The sixth pillar, only for a session whose guard ran in an enclave.
	switch a, err := genesisEnclave(c); {
	case err != nil:
		res.Pillars = append(res.Pillars, failP(PillarEnclave, 0, "%v", err))
		res.Valid = false
	case a != nil:
		p6 := checkEnclave(a, enclaveRoots)
		res.Pillars = append(res.Pillars, p6)
		res.Valid = res.Valid && p6.OK
	}
	return res
}

// checkIssuer verifies pillar 1 and returns the key the rest of the
// verification trusts: the pinned key when given, else the named one.
func checkIssuer(c *Certificate, body []byte, sig *CertSignature, pinned ed25519.PublicKey) (ed25519.PublicKey, Pillar) {
	named := ed25519.PublicKey(c.Issuer.PublicKey)
	trusted := pinned
	if trusted == nil {
		trusted = named
	}
	if len(trusted) != ed25519.PublicKeySize {
		return ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)), failP(PillarIssuer, -1, "the certificate names no valid issuer public key")
	}
	switch {
	case sig == nil:
		// An unsigned certificate is not evidence of anything.
		return trusted, failP(PillarIssuer, -1, "not signed: the certificate carries no issuer signature")
	case len(named) != ed25519.PublicKeySize || !issuerKeyOK(&c.Issuer, named):
		return trusted, failP(PillarIssuer, -1, "the issuer block is inconsistent (key id, did:key and origin must all derive from the public key)")
	case pinned != nil && !named.Equal(pinned):
		return trusted, failP(PillarIssuer, -1, "the certificate names issuer key %s, the pinned issuer key is %s: it was not issued by the key you trust", ledger.KeyID(named), ledger.KeyID(pinned))
	case sig.Alg != "Ed25519":
		return trusted, failP(PillarIssuer, -1, "signature algorithm %q (want Ed25519)", sig.Alg)
	case sig.KeyID != ledger.KeyID(trusted):
		return trusted, failP(PillarIssuer, -1, "signed by key %s, the issuer key is %s", sig.KeyID, ledger.KeyID(trusted))
	}
	d := certDigest(body)
	if len(sig.Value) != ed25519.SignatureSize || !ed25519.Verify(trusted, d[:], sig.Value) {
		return trusted, failP(PillarIssuer, -1, "the issuer signature does not verify with key %s: the certificate was changed after it was signed", ledger.KeyID(trusted))
	}
	if pinned == nil {
		return trusted, passP(PillarIssuer, fmt.Sprintf("issuer key %s NOT PINNED: this proves only that the certificate is self-consistent; pin the issuer's public key (--issuer-key or --issuer-key-file) to trust it", ledger.KeyID(trusted)))
	}
	return trusted, passP(PillarIssuer, fmt.Sprintf("signed by the pinned issuer key %s", ledger.KeyID(trusted)))
}

// verifyInput converts the certificate into the ledger's verification
// input. A problem means the data is not even well-formed (seq: where).
func verifyInput(c *Certificate, issuer ed25519.PublicKey) (in *ledger.VerifyInput, problem string, seq int64) {
	id, err := uuid.Parse(c.Session.ID)
	if err != nil || len(c.Session.ID) != 36 {
		return nil, fmt.Sprintf("session id %q is not a UUID", c.Session.ID), -1
	}
	if id == ledger.InstanceSessionID {
		return nil, "the instance chain is not certified", -1
	}
	if len(c.Session.SessionPublicKey) != ed25519.PublicKeySize {
		return nil, "the session public key is not 32 bytes", -1
	}
	s := &ledger.Session{
		ID: id, Goal: c.Session.Goal, GoalHash: c.Session.GoalHash, Status: ledger.Status(c.Session.Status),
		PublicKey: ed25519.PublicKey(c.Session.SessionPublicKey), DID: c.Session.SessionDID,
		LLMBackend: c.Session.LLMBackend, LLMModel: c.Session.LLMModel, SandboxTier: c.Session.SandboxTier,
	}
	if c.Session.PolicyHash != nil {
		s.PolicyHash = *c.Session.PolicyHash
	}
	s.AgentLoop = c.Session.AgentLoop
	// Every time the header shows is checked against the signed events
	// (ledger checkGoal and checkSeal), so each must parse.
	for _, f := range []struct {
		name string
		v    *string
		dst  *time.Time
	}{
		{"created_at", &c.Session.CreatedAt, &s.CreatedAt},
		{"finished_at", c.Session.FinishedAt, &s.FinishedAt},
		{"sealed_at", c.Session.SealedAt, &s.SealedAt},
	} {
		if f.v == nil {
			continue
		}
		t, err := time.Parse(ledger.TimeFormat, *f.v)
		if err != nil || t.IsZero() {
			return nil, fmt.Sprintf("%s %q is not a timestamp", f.name, *f.v), -1
		}
		*f.dst = t
	}
	in = &ledger.VerifyInput{
		SessionID: id, Session: s, IssuerKey: issuer, Origin: ledger.OriginPrefix + ledger.KeyID(issuer),
		MissingLeaf: -1, TreeChecked: true, NotIncluded: -1,
	}
	in.Events = make([]ledger.Event, len(c.Events))
	for i := range c.Events {
		e := &c.Events[i]
		in.Events[i] = ledger.Event{
			LogIndex: e.LogIndex, SessionID: id, Seq: e.Seq, Type: e.Type, Payload: []byte(e.Payload),
			CreatedMicros: e.CreatedAtMicros, PrevHash: e.PrevHash, Hash: e.Hash, Signature: e.Signature,
			KeyID: e.KeyID, Signer: e.Signer,
		}
	}
	in.Keys = make([]ledger.KeyRecord, len(c.Keys))
	for i, k := range c.Keys {
		in.Keys[i] = ledger.KeyRecord{SessionID: id, ValidFromSeq: k.ValidFromSeq, KeyID: k.KeyID, PublicKey: ed25519.PublicKey(k.PublicKey)}
	}
	cp, problem := ledgerCheckpoint(&c.Checkpoint)
	if problem != "" {
		return nil, "checkpoint: " + problem, -1
	}
	in.Checkpoint = cp
	if c.SealCheckpoint != nil {
		if in.SealCheckpoint, problem = ledgerCheckpoint(c.SealCheckpoint); problem != "" {
			return nil, "seal checkpoint: " + problem, -1
		}
	}
	return in, "", -1
}

func ledgerCheckpoint(c *CertCheckpoint) (*ledger.Checkpoint, string) {
	if c.TreeSize <= 0 {
		return nil, fmt.Sprintf("tree size %d", c.TreeSize)
	}
	return &ledger.Checkpoint{
		TreeSize: c.TreeSize, Root: c.RootHash, KeyID: c.KeyID, PublicKey: ed25519.PublicKey(c.PublicKey),
		Signature: c.Signature, Note: []byte(c.Note),
	}, ""
}

// checkBinding is pillar 5 after goal anchoring: the policy hash is the
// one the chain started with, every high or critical finding cites
// observations of this session whose text contains its quotes, and the
// findings are exactly those the chain's complete action recorded.
func checkBinding(c *Certificate, evs []ledger.Event) Pillar {
	if !samePtr(c.PolicyHash, c.Session.PolicyHash) {
		return failP(PillarBinding, 0, "the certificate's policy_hash %s differs from the session's %s", strOr(c.PolicyHash, "null"), strOr(c.Session.PolicyHash, "null"))
	}
	if c.Format != CertificateFormatV1 {
		// The labels are unsigned conveniences: one that disagrees with
		// the signed payload would show a client's event as IronVise's.
		for i := range c.Events {
			if want := ledger.EventOrigin(evs[i].Payload); c.Events[i].Origin != want {
				return failP(PillarBinding, int64(evs[i].Seq), "event %d is labelled origin %q, its signed payload says %q", evs[i].Seq, c.Events[i].Origin, want)
			}
		}
	}
	if p := checkFindingsEvidence(c.Findings, evs); !p.OK {
		return p
	}
	chain, problem := extractFindings(evs)
	if problem != "" {
		return failP(PillarBinding, -1, "%s", problem)
	}
	if len(chain) != len(c.Findings) || (len(chain) > 0 && !reflect.DeepEqual(chain, c.Findings)) {
		return failP(PillarBinding, -1, "the certificate lists %d finding(s) that differ from the %d recorded by the chain's complete action", len(c.Findings), len(chain))
	}
	policy := "no policy"
	if c.PolicyHash != nil {
		policy = "policy " + *c.PolicyHash
	}
	return passP(PillarBinding, fmt.Sprintf("goal anchored, %s, %d finding(s) with verified evidence", policy, len(c.Findings)))
}

// checkFindingsEvidence applies the finding rules of
// docs/design/checks.md#intent-model to findings against the events (the
// chain from sequence 0): high and critical findings need evidence, every
// cited sequence is an observation IronVise recorded from an action it
// executed, before the finding (ledger.ExecutedObservation: a client's own
// observation never counts), every non-empty quote is a substring of its
// observation's content, and a high or critical finding has such a quote for
// each cited observation.
func checkFindingsEvidence(fs []Finding, evs []ledger.Event) Pillar {
	for i, f := range fs {
		at := int64(f.ActionSeq)
		what := fmt.Sprintf("finding %d (%s, %q)", i+1, f.Severity, f.Title)
		if severityRank(f.Severity) == 0 {
			return failP(PillarBinding, at, "%s: unknown severity", what)
		}
		if NeedsEvidence(f.Severity) && len(f.EvidenceSequence) == 0 {
			return failP(PillarBinding, at, "%s cites no observation: high and critical findings need evidence_sequence", what)
		}
		if len(f.EvidenceQuotes) > len(f.EvidenceSequence) {
			return failP(PillarBinding, at, "%s has more quotes than cited sequences", what)
		}
		for j, seq := range f.EvidenceSequence {
			if seq < 0 {
				return failP(PillarBinding, at, "%s cites sequence %d, which is not an observation of this session", what, seq)
			}
			text, problem := ledger.ExecutedObservation(evs, uint64(seq))
			if problem != "" {
				return failP(PillarBinding, at, "%s cites sequence %d, which is not evidence: %s", what, seq, problem)
			}
			if seq >= at {
				return failP(PillarBinding, at, "%s cites sequence %d, recorded after the finding", what, seq)
			}
			quote := ""
			if j < len(f.EvidenceQuotes) {
				quote = f.EvidenceQuotes[j]
			}
			// Without a quote, citing any earlier observation would pass
			// as evidence for a high or critical finding.
			if quote == "" && NeedsEvidence(f.Severity) {
				return failP(PillarBinding, at, "%s cites observation %d without a quote: high and critical findings need a non-empty quote found in each cited observation", what, seq)
			}
			if quote != "" && !strings.Contains(text, quote) {
				return failP(PillarBinding, at, "%s quotes %q, which is not in observation %d", what, quote, seq)
			}
		}
	}
	return passP(PillarBinding, "")
}

func samePtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func strOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}
