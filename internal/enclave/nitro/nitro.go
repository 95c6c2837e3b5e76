// Package nitro verifies AWS Nitro Enclaves attestation documents, the proof
// a Level 3 enclave (internal/enclave, [enclave.LevelRemote]) gives of the
// code it runs and of the key it holds.
//
// # Format
//
// A document is a COSE_Sign1 message (tagged with CBOR tag 18 or not) whose
// protected header names ES384 and whose payload is a CBOR map: module_id,
// digest ("SHA384"), timestamp (milliseconds since the Unix epoch), pcrs
// (index to 32, 48 or 64 bytes), certificate (the DER leaf whose ECDSA P-384
// key signed the message), cabundle (DER, the root first and the
// intermediate closest to the leaf last), and the optional public_key,
// user_data and nonce.
//
// # Verification
//
// [Verify] refuses anything it cannot decode strictly (duplicate map keys,
// tags, oversized documents, missing or mistyped fields), then checks, in
// order: the certificate chain from the leaf through the cabundle to the
// pinned AWS root (or [Options.Roots]) at [Options.Time] or the document's
// own timestamp; the ES384 signature with the leaf's key; the nonce; each
// pinned PCR; and the user_data and public_key bindings. Each failure wraps
// one of the sentinel errors and says what differed:
//
//	doc, err := nitro.Verify(raw, nitro.Options{
//		Nonce: nonce,
//		PCRs:  map[int][]byte{0: pcr0},
//		UserData: clientKeyHash,
//		Time:  time.Now(),
//	})
//	if errors.Is(err, nitro.ErrPCR) { ... }
//
// The pinned root is embedded (root.pem) and checked against its published
// SHA-256 fingerprint, [RootFingerprint], before it is trusted.
//
// # Limitations
//
// Revocation is not checked: AWS publishes CRLs for the intermediates, but
// fetching them would make verification depend on the network.
//
// With a zero [Options.Time] the chain is checked at the document's own
// timestamp, which the leaf key signed. A leaf key that leaked after its
// certificate expired could then sign a backdated document carrying any
// nonce; a caller verifying a live exchange should pass the current time.
//
// Unknown payload keys are ignored rather than refused, so that a field AWS
// adds later does not break verification; they are covered by the
// signature but not reported.
package nitro

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/veraison/go-cose"
)

// Options say what a document must show to verify.
type Options struct {
	// Roots replaces the pinned AWS Nitro Enclaves root; nil (always, outside
	// tests) means the pinned root.
	Roots *x509.CertPool
	// Nonce is required: the document's nonce must equal it.
	Nonce []byte
	// PCRs must each equal the document's PCR of that index.
	PCRs map[int][]byte
	// UserData, when not nil, must equal the document's user_data.
	UserData []byte
	// PublicKey, when not nil, must equal the document's public_key.
	PublicKey []byte
	// Time is when the chain must be valid; zero means the document's own
	// timestamp.
	Time time.Time
}

// Document is a verified attestation document.
type Document struct {
	// ModuleID is the enclave's module_id.
	ModuleID string
	// Timestamp is when the Nitro Secure Module signed the document.
	Timestamp time.Time
	// Digest is the PCRs' hash ("SHA384").
	Digest string
	// PCRs are all the document's PCRs, by index.
	PCRs map[int][]byte
	// Certificate is the leaf that signed the document.
	Certificate *x509.Certificate
	// CABundle is the document's cabundle, root first.
	CABundle []*x509.Certificate
	// PublicKey, UserData and Nonce are the optional fields; nil when the
	// document leaves them out or null.
	PublicKey []byte
	UserData  []byte
	Nonce     []byte
}

// The ways a document fails, compared with errors.Is.
var (
	// ErrMalformed: not a COSE_Sign1 Nitro document (undecodable, too large,
	// a required field missing or mistyped, a certificate unparsable).
	ErrMalformed = errors.New("nitro: malformed attestation document")
	// ErrSignature: the COSE signature does not verify with the leaf key,
	// the protected header names an algorithm other than ES384, or the
	// leaf key is not ECDSA P-384.
	ErrSignature = errors.New("nitro: attestation signature does not verify")
	// ErrChain: the certificate chain does not lead to the pinned root, or a
	// certificate is not valid at the verification time.
	ErrChain = errors.New("nitro: certificate chain does not verify")
	// ErrNonce: the nonce is missing or not the one sent (a replay).
	ErrNonce = errors.New("nitro: nonce does not match")
	// ErrPCR: a pinned PCR differs.
	ErrPCR = errors.New("nitro: PCR does not match")
	// ErrBinding: user_data or public_key is not what was bound.
	ErrBinding = errors.New("nitro: key binding does not match")
)

// Verify parses doc and verifies it against opt. It returns the document's
// fields only when every check passed.
func Verify(doc []byte, opt Options) (*Document, error) {
	// Bounding the input first bounds every later allocation.
	if len(doc) == 0 {
		return nil, fmt.Errorf("nitro: document empty: %w", ErrMalformed)
	}
	if len(doc) > MaxDocumentSize {
		return nil, fmt.Errorf("nitro: document of %d bytes, at most %d: %w", len(doc), MaxDocumentSize, ErrMalformed)
	}
	msg, err := decodeSign1(doc)
	if err != nil {
		return nil, err
	}
	alg, err := msg.Headers.Protected.Algorithm()
	if err != nil {
		return nil, fmt.Errorf("nitro: protected header alg: %w: %w", ErrMalformed, err)
	}
	// Only ES384 is accepted, whatever the header says: letting the
	// document pick its algorithm is the classic downgrade.
	if alg != cose.AlgorithmES384 {
		return nil, fmt.Errorf("nitro: protected header alg is %v, want ES384: %w", alg, ErrSignature)
	}
	if msg.Payload == nil {
		return nil, fmt.Errorf("nitro: payload missing (detached): %w", ErrMalformed)
	}
	p, ts, err := decodePayload(msg.Payload)
	if err != nil {
		return nil, err
	}
	leaf, bundle, err := parseCertificates(p)
	if err != nil {
		return nil, err
	}

	roots := opt.Roots
	if roots == nil {
		if roots, err = pinnedRoots(); err != nil {
			return nil, err
		}
	}
	at := opt.Time
	if at.IsZero() {
		at = ts
	}
	if err := verifyChain(leaf, bundle, roots, at); err != nil {
		return nil, err
	}
	if err := verifySignature(msg, leaf); err != nil {
		return nil, err
	}

	// The nonce is what makes the document fresh: without it, any document
	// the enclave ever produced could be replayed to this verifier.
	if len(opt.Nonce) == 0 {
		return nil, fmt.Errorf("nitro: no nonce to compare with (Options.Nonce is empty): %w", ErrNonce)
	}
	if p.Nonce == nil {
		return nil, fmt.Errorf("nitro: document carries no nonce, sent %s: %w", shortHex(opt.Nonce), ErrNonce)
	}
	if subtle.ConstantTimeCompare(p.Nonce, opt.Nonce) != 1 {
		got, want := pairHex(p.Nonce, opt.Nonce)
		return nil, fmt.Errorf("nitro: nonce is %s, sent %s: %w", got, want, ErrNonce)
	}

	// Pinned PCRs are what tie the document to the enclave image the
	// operator approved; any other image can produce a valid document.
	for _, i := range slices.Sorted(maps.Keys(opt.PCRs)) {
		want := opt.PCRs[i]
		if i < 0 || i >= MaxPCRs {
			return nil, fmt.Errorf("nitro: pinned PCR%d: no such index (0 to %d): %w", i, MaxPCRs-1, ErrPCR)
		}
		got, ok := p.PCRs[uint64(i)]
		if !ok {
			return nil, fmt.Errorf("nitro: PCR%d missing, pinned %s: %w", i, shortHex(want), ErrPCR)
		}
		if subtle.ConstantTimeCompare(got, want) != 1 {
			g, w := pairHex(got, want)
			return nil, fmt.Errorf("nitro: PCR%d is %s, pinned %s: %w", i, g, w, ErrPCR)
		}
	}

	// user_data and public_key bind the key exchange to this document; a
	// document with another key would let a relay sit in the middle.
	if opt.UserData != nil && subtle.ConstantTimeCompare(p.UserData, opt.UserData) != 1 {
		g, w := pairHex(p.UserData, opt.UserData)
		return nil, fmt.Errorf("nitro: user_data is %s, bound %s: %w", g, w, ErrBinding)
	}
	if opt.PublicKey != nil && subtle.ConstantTimeCompare(p.PublicKey, opt.PublicKey) != 1 {
		g, w := pairHex(p.PublicKey, opt.PublicKey)
		return nil, fmt.Errorf("nitro: public_key is %s, bound %s: %w", g, w, ErrBinding)
	}

	pcrs := make(map[int][]byte, len(p.PCRs))
	for i, v := range p.PCRs {
		pcrs[int(i)] = v
	}
	return &Document{
		ModuleID:    *p.ModuleID,
		Timestamp:   ts,
		Digest:      *p.Digest,
		PCRs:        pcrs,
		Certificate: leaf,
		CABundle:    bundle,
		PublicKey:   p.PublicKey,
		UserData:    p.UserData,
		Nonce:       p.Nonce,
	}, nil
}

// decodeSign1 decodes the COSE_Sign1 envelope, tagged (18) or not.
func decodeSign1(doc []byte) (*cose.Sign1Message, error) {
	var msg cose.Sign1Message
	var err error
	switch doc[0] {
	case 0xd2: // tag 18, COSE_Sign1_Tagged
		err = msg.UnmarshalCBOR(doc)
	case 0x84: // an array of four, COSE_Sign1
		err = (*cose.UntaggedSign1Message)(&msg).UnmarshalCBOR(doc)
	default:
		return nil, fmt.Errorf("nitro: document starts with 0x%02x, not a COSE_Sign1: %w", doc[0], ErrMalformed)
	}
	if err != nil {
		return nil, fmt.Errorf("nitro: COSE_Sign1: %w: %w", ErrMalformed, err)
	}
	return &msg, nil
}

// parseCertificates parses the leaf and the cabundle.
func parseCertificates(p *payload) (*x509.Certificate, []*x509.Certificate, error) {
	leaf, err := x509.ParseCertificate(p.Certificate)
	if err != nil {
		return nil, nil, fmt.Errorf("nitro: certificate: %w: %w", ErrMalformed, err)
	}
	bundle := make([]*x509.Certificate, len(p.CABundle))
	for i, der := range p.CABundle {
		if bundle[i], err = x509.ParseCertificate(der); err != nil {
			return nil, nil, fmt.Errorf("nitro: cabundle[%d]: %w: %w", i, ErrMalformed, err)
		}
	}
	return leaf, bundle, nil
}

// verifyChain checks that the cabundle starts at (or chains to) a root in
// roots, and that the leaf chains through the cabundle to a root, all valid
// at the time at.
func verifyChain(leaf *x509.Certificate, bundle []*x509.Certificate, roots *x509.CertPool, at time.Time) error {
	anyUsage := []x509.ExtKeyUsage{x509.ExtKeyUsageAny}
	// The bundle's first certificate is where the document says its trust
	// starts; a bundle rooted in an attacker's CA is refused here even
	// before the leaf is looked at.
	if _, err := bundle[0].Verify(x509.VerifyOptions{Roots: roots, CurrentTime: at, KeyUsages: anyUsage}); err != nil {
		return fmt.Errorf("nitro: cabundle[0] %q is not a trusted root: %w: %w", bundle[0].Subject.String(), err, ErrChain)
	}
	inter := x509.NewCertPool()
	for _, c := range bundle {
		inter.AddCert(c)
	}
	// The leaf's key is only as good as its chain: a leaf from any other
	// CA could sign whatever PCRs and nonce it liked.
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		CurrentTime:   at,
		KeyUsages:     anyUsage,
	}); err != nil {
		return fmt.Errorf("nitro: leaf %q at %s: %w: %w", leaf.Subject.String(), at.UTC().Format(time.RFC3339), err, ErrChain)
	}
	return nil
}

// verifySignature checks the COSE ES384 signature with the leaf's key.
func verifySignature(msg *cose.Sign1Message, leaf *x509.Certificate) error {
	key, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	// ES384 is ECDSA over P-384; a leaf on another curve is not Nitro's
	// and would make "ES384" mean a weaker signature.
	if !ok || key.Curve != elliptic.P384() {
		return fmt.Errorf("nitro: leaf key is %s, want ECDSA P-384: %w", leaf.PublicKeyAlgorithm, ErrSignature)
	}
	v, err := cose.NewVerifier(cose.AlgorithmES384, key)
	if err != nil {
		return fmt.Errorf("nitro: leaf key: %w: %w", err, ErrSignature)
	}
	if err := msg.Verify(nil, v); err != nil {
		return fmt.Errorf("nitro: COSE_Sign1 with leaf %q: %w: %w", leaf.Subject.String(), err, ErrSignature)
	}
	return nil
}

// shortHex is b in hex, cut to its first 8 bytes.
func shortHex(b []byte) string {
	if b == nil {
		return "absent"
	}
	if len(b) <= 8 {
		return hex.EncodeToString(b)
	}
	return hex.EncodeToString(b[:8]) + "…"
}

// pairHex formats two differing values for an error: short when their
// short forms differ, in full when only the tails do.
func pairHex(got, want []byte) (string, string) {
	g, w := shortHex(got), shortHex(want)
	if g != w || bytes.Equal(got, want) {
		return g, w
	}
	return hex.EncodeToString(got), hex.EncodeToString(want)
}
