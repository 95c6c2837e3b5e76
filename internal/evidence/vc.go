package evidence

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Verifiable credentials (docs/design/ledger.md#evidence-exports): a W3C VC
// Data Model 1.1 credential in the JWT encoding, signed EdDSA (Ed25519) by
// the issuer key, issuer = the did:key of that key. Its subject is the
// session: id, goal hash, policy hash, tip hash and the checkpoint that
// covers the tip, so a relying party can tie the credential to the
// certificate and to any later checkpoint by a consistency proof.

// Credential constants.
const (
	vcContextV1 = "https://www.w3.org/2018/credentials/v1"
	vcType      = "VerifiableCredential"
	// SessionCredentialType is the credential's own type.
	SessionCredentialType = "IronViseSessionCredential"
	// MaxVCBytes bounds a VC-JWT a verifier reads.
	MaxVCBytes = 64 << 10
	// vcClockSkew tolerates clocks of issuer and verifier disagreeing.
	vcClockSkew = 5 * time.Minute
)

// VCClaims are the JWT claims of a session credential.
type VCClaims struct {
	Issuer    string     `json:"iss"`
	Subject   string     `json:"sub"`
	ID        string     `json:"jti"`
	IssuedAt  int64      `json:"iat"`
	NotBefore int64      `json:"nbf"`
	Expires   *int64     `json:"exp,omitempty"`
	VC        Credential `json:"vc"`
}

// Credential is the "vc" claim.
type Credential struct {
	Context      []string          `json:"@context"`
	Type         []string          `json:"type"`
	Issuer       string            `json:"issuer"`
	IssuanceDate string            `json:"issuanceDate"`
	Subject      CredentialSubject `json:"credentialSubject"`
}

// CredentialSubject describes the session the credential is about.
type CredentialSubject struct {
	// ID is "urn:uuid:<session id>".
	ID          string  `json:"id"`
	SessionID   string  `json:"session_id"`
	Status      string  `json:"status"`
	GoalHash    string  `json:"goal_hash"`
	PolicyHash  *string `json:"policy_hash"`
	TipSequence uint64  `json:"tip_sequence"`
	TipHash     string  `json:"tip_hash"`
	EventCount  uint64  `json:"event_count"`
	// Checkpoint is the signed tree head that covers the tip.
	Checkpoint VCCheckpoint `json:"checkpoint"`
}

// VCCheckpoint names a checkpoint in a credential.
type VCCheckpoint struct {
	Origin   string `json:"origin"`
	TreeSize int64  `json:"tree_size"`
	RootHash string `json:"root_hash"`
	KeyID    string `json:"key_id"`
}

type jwtHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// IssueVC issues the credential of session id as it stands: a checkpoint
// covering its newest event is written if needed, and the JWT is returned
// (not recorded; see AppendVC).
func IssueVC(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (string, error) {
	return issueVC(ctx, l, id, time.Now())
}

func issueVC(ctx context.Context, l *ledger.Ledger, id uuid.UUID, now time.Time) (string, error) {
	if id == ledger.InstanceSessionID {
		return "", fmt.Errorf("evidence: issue credential: %w", ErrInstanceChain)
	}
	cp, err := l.Checkpoint(ctx)
	if err != nil {
		return "", fmt.Errorf("evidence: issue credential for %s: %w", id, err)
	}
	s, err := l.Session(ctx, id)
	if err != nil {
		return "", fmt.Errorf("evidence: issue credential: %w", err)
	}
	if s.EventCount < 1 {
		return "", fmt.Errorf("evidence: issue credential for %s: the session has no events", id)
	}
	evs, err := l.Events(ctx, id, uint64(s.EventCount-1), 0)
	if err != nil || len(evs) == 0 {
		return "", fmt.Errorf("evidence: issue credential for %s: read the tip: %w", id, errors.Join(err, ledger.ErrNotFound))
	}
	tip := evs[len(evs)-1]
	if tip.LogIndex >= cp.TreeSize {
		// Only another writer appending right now can cause this; the
		// credential must name a checkpoint that covers what it states.
		return "", fmt.Errorf("evidence: issue credential for %s: the tip (log index %d) is not covered by checkpoint %d; retry", id, tip.LogIndex, cp.TreeSize)
	}
	// A credential vouches for the session's findings: issue none when
	// they cite anything but what IronVise observed of actions it
	// executed (issue 13: a client's own observation once earned one).
	if err := checkSessionFindings(ctx, l, id); err != nil {
		return "", fmt.Errorf("evidence: issue credential for %s: %w", id, err)
	}
	issuer := l.IssuerPublicKey()
	did := ledger.DIDKey(issuer)
	claims := VCClaims{
		Issuer: did, Subject: id.String(), ID: fmt.Sprintf("urn:ironvise:vc:%s:%d", id, tip.Seq),
		IssuedAt: now.Unix(), NotBefore: now.Unix(),
		VC: Credential{
			Context: []string{vcContextV1}, Type: []string{vcType, SessionCredentialType}, Issuer: did,
			IssuanceDate: now.UTC().Format(time.RFC3339),
			Subject: CredentialSubject{
				ID: "urn:uuid:" + id.String(), SessionID: id.String(), Status: string(s.Status), GoalHash: s.GoalHash,
				PolicyHash: nonEmpty(s.PolicyHash), TipSequence: tip.Seq, TipHash: tip.Hash.String(), EventCount: tip.Seq + 1,
				Checkpoint: VCCheckpoint{Origin: l.Origin(), TreeSize: cp.TreeSize, RootHash: cp.Root.String(), KeyID: cp.KeyID},
			},
		},
	}
	return signJWT(l.Issuer(), &claims)
}

// checkSessionFindings applies the certificate's findings rules
// (FindingsCheck) to the session's chain as it stands; the error wraps
// ErrUnbackedFindings with the first problem.
func checkSessionFindings(ctx context.Context, l *ledger.Ledger, id uuid.UUID) error {
	evs, err := l.Events(ctx, id, 0, 0)
	if err != nil {
		return err
	}
	if c := FindingsCheck(evs); !c.OK {
		return fmt.Errorf("%w: %s", ErrUnbackedFindings, c.Problem)
	}
	return nil
}

// FindingCheckName names FindingsCheck beside the ledger's five checks
// (ledger.CheckNames) in verify-session and the API's verify route.
const FindingCheckName = "findings"

// FindingsCheck applies the findings rules of the certificate's fifth
// pillar to a session's chain (all its events, from sequence 0): every
// finding of a complete action IronVise committed cites only observations
// IronVise recorded from actions it executed, with its quotes in them.
// Seq is the complete action of the first failing finding.
func FindingsCheck(evs []ledger.Event) ledger.Check {
	fs, problem := extractFindings(evs)
	if problem != "" {
		return ledger.Check{Seq: -1, Problem: problem}
	}
	p := checkFindingsEvidence(fs, evs)
	if !p.OK {
		seq := int64(-1)
		if p.Sequence != nil {
			seq = *p.Sequence
		}
		return ledger.Check{Seq: seq, Problem: p.Problem}
	}
	c := ledger.Check{OK: true, Seq: -1}
	if len(fs) > 0 {
		c.Note = fmt.Sprintf("%d finding(s), each citing what IronVise observed", len(fs))
	}
	return c
}

// AppendVC issues the credential of session id and records it as a
// verifiable_credential {vc_jwt} event.
func AppendVC(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (ledger.Event, error) {
	jwt, err := IssueVC(ctx, l, id)
	if err != nil {
		return ledger.Event{}, err
	}
	ev, err := l.Append(ctx, id, ledger.TypeVerifiableCredential, vcPayload{VCJWT: jwt})
	if err != nil {
		return ledger.Event{}, fmt.Errorf("evidence: record credential for %s: %w", id, err)
	}
	return ev, nil
}

// vcPayload is the payload of a verifiable_credential event
// (docs/design/api.md#event-payloads).
type vcPayload struct {
	VCJWT string `json:"vc_jwt"`
}

// Credentials issues credentials into a ledger. It implements the agent
// loop's credential hook, called when a session completes, before the
// seal.
type Credentials struct {
	Ledger *ledger.Ledger
}

// IssueCredential appends the verifiable credential of a completed
// session.
func (c Credentials) IssueCredential(ctx context.Context, session uuid.UUID) error {
	_, err := AppendVC(ctx, c.Ledger, session)
	return err
}

// signJWT encodes and signs a JWS compact serialisation with EdDSA.
func signJWT(issuer *ledger.SigningKey, claims *VCClaims) (string, error) {
	pub := issuer.Public()
	h, err := json.Marshal(jwtHeader{Alg: "EdDSA", Kid: ledger.DIDKey(pub) + "#" + strings.TrimPrefix(ledger.DIDKey(pub), "did:key:"), Typ: "JWT"})
	if err != nil {
		return "", fmt.Errorf("evidence: encode credential header: %w", err)
	}
	p, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("evidence: encode credential: %w", err)
	}
	input := b64(h) + "." + b64(p)
	// The issuer key signs the JWS input itself (EdDSA signs the message,
	// not a digest); SignJWS is the key's one way to sign anything but an
	// event hash.
	sig, err := issuer.SignJWS([]byte(input))
	if err != nil {
		return "", fmt.Errorf("evidence: sign credential: %w", err)
	}
	return input + "." + b64(sig), nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func unb64(s string) ([]byte, error) { return base64.RawURLEncoding.Strict().DecodeString(s) }

// VerifyVC verifies a VC-JWT: structure, EdDSA signature by the did:key
// issuer (and that issuer equals pinned, when given), validity window and
// the credential's shape. It returns the claims.
func VerifyVC(jwt string, pinned ed25519.PublicKey) (*VCClaims, error) {
	return verifyVC(jwt, pinned, time.Now())
}

func vcErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidCredential, fmt.Sprintf(format, args...))
}

func verifyVC(jwt string, pinned ed25519.PublicKey, now time.Time) (*VCClaims, error) {
	jwt = strings.TrimSpace(jwt)
	if len(jwt) > MaxVCBytes {
		return nil, vcErr("%d bytes (max %d)", len(jwt), MaxVCBytes)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return nil, vcErr("not a compact JWS (want header.payload.signature)")
	}
	hb, err := unb64(parts[0])
	if err != nil {
		return nil, vcErr("header is not base64url")
	}
	pb, err := unb64(parts[1])
	if err != nil {
		return nil, vcErr("payload is not base64url")
	}
	sig, err := unb64(parts[2])
	if err != nil {
		return nil, vcErr("signature is not base64url")
	}
	if len(sig) == 0 {
		return nil, vcErr("not signed")
	}
	var h jwtHeader
	if err := strictJSON(hb, &h); err != nil {
		return nil, vcErr("header: %v", err)
	}
	// Only EdDSA: "none" or an HMAC algorithm keyed with the public key
	// would let anyone mint credentials.
	if h.Alg != "EdDSA" {
		return nil, vcErr("algorithm %q (want EdDSA)", h.Alg)
	}
	if h.Typ != "" && h.Typ != "JWT" {
		return nil, vcErr("type %q (want JWT)", h.Typ)
	}
	var c VCClaims
	if err := strictJSON(pb, &c); err != nil {
		return nil, vcErr("claims: %v", err)
	}
	pub, err := ParseDIDKey(c.Issuer)
	if err != nil {
		return nil, vcErr("issuer: %v", err)
	}
	if h.Kid != "" && h.Kid != c.Issuer+"#"+strings.TrimPrefix(c.Issuer, "did:key:") {
		return nil, vcErr("key id %q does not name the issuer %s", h.Kid, c.Issuer)
	}
	if pinned != nil && !pub.Equal(pinned) {
		return nil, vcErr("issued by key %s, the pinned issuer key is %s", ledger.KeyID(pub), ledger.KeyID(pinned))
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		return nil, vcErr("bad signature: the credential was changed or not signed by %s", c.Issuer)
	}
	if c.NotBefore != 0 && now.Add(vcClockSkew).Unix() < c.NotBefore {
		return nil, vcErr("not valid before %s", time.Unix(c.NotBefore, 0).UTC().Format(time.RFC3339))
	}
	if c.Expires != nil && now.Add(-vcClockSkew).Unix() >= *c.Expires {
		return nil, vcErr("expired at %s", time.Unix(*c.Expires, 0).UTC().Format(time.RFC3339))
	}
	if err := checkCredentialShape(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

func checkCredentialShape(c *VCClaims) error {
	v := &c.VC
	s := &v.Subject
	switch {
	case len(v.Context) == 0 || v.Context[0] != vcContextV1:
		return vcErr("@context must start with %s", vcContextV1)
	case !contains(v.Type, vcType) || !contains(v.Type, SessionCredentialType):
		return vcErr("type must include %s and %s", vcType, SessionCredentialType)
	case v.Issuer != c.Issuer:
		return vcErr("vc.issuer %q differs from iss %q", v.Issuer, c.Issuer)
	case s.SessionID != c.Subject || s.ID != "urn:uuid:"+c.Subject:
		return vcErr("credential subject %q does not match sub %q", s.ID, c.Subject)
	case !isHex64(s.GoalHash) || !isHex64(s.TipHash) || !isHex64(s.Checkpoint.RootHash) || (s.PolicyHash != nil && !isHex64(*s.PolicyHash)):
		return vcErr("subject hashes must be 64 lowercase hex digits")
	case s.Checkpoint.TreeSize <= 0:
		return vcErr("subject names no checkpoint")
	}
	if _, err := uuid.Parse(c.Subject); err != nil {
		return vcErr("sub %q is not a session id", c.Subject)
	}
	return nil
}

func strictJSON(b []byte, v any) error {
	// A number a double cannot hold exactly would let two parsers
	// disagree on a claim (I-JSON); strictDecode rejects the rest.
	if _, err := ledger.Canonicalize(b); err != nil {
		return err
	}
	return strictDecode(b, v)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseDIDKey returns the Ed25519 public key of a did:key
// ("did:key:z" + base58btc(0xed 0x01 ‖ key)); other key types and
// non-canonical encodings are refused.
func ParseDIDKey(did string) (ed25519.PublicKey, error) {
	rest, ok := strings.CutPrefix(did, "did:key:z")
	if !ok || len(rest) > 64 {
		return nil, fmt.Errorf("%q is not a did:key in base58btc", did)
	}
	b, err := base58Decode(rest)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", did, err)
	}
	if len(b) != 2+ed25519.PublicKeySize || b[0] != 0xed || b[1] != 0x01 {
		return nil, fmt.Errorf("%q is not an Ed25519 did:key", did)
	}
	pub := ed25519.PublicKey(b[2:])
	if ledger.DIDKey(pub) != did {
		return nil, fmt.Errorf("%q is not in canonical form", did)
	}
	return pub, nil
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

func base58Decode(s string) ([]byte, error) {
	n := new(big.Int)
	radix := big.NewInt(58)
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(base58Alphabet, s[i])
		if d < 0 {
			return nil, fmt.Errorf("invalid base58 character %q", s[i])
		}
		n.Mul(n, radix)
		n.Add(n, big.NewInt(int64(d)))
	}
	return append(make([]byte, zeros), n.Bytes()...), nil
}
