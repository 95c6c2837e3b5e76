// Package nitrotest makes AWS Nitro Enclaves attestation documents for the
// tests of internal/enclave/nitro: a certificate authority shaped like
// Nitro's (root, intermediate, per-document leaf, all ECDSA P-384) that signs
// COSE_Sign1 documents, good ones and each kind of broken one.
//
// Only tests import this package. Its keys are generated in memory and its
// roots mean nothing outside a test; production code must never import it
// (a verifier trusting [Authority.Roots] would accept documents anyone can
// mint).
//
// # Usage
//
//	a, err := nitrotest.NewAuthority()
//	doc, err := a.Sign(nitrotest.Fields{Nonce: nonce})
//	_, err = nitro.Verify(doc, nitro.Options{Roots: a.Roots, Nonce: nonce})
//
// # Limitations
//
// The chain has one intermediate where Nitro's has three, and no CRL
// distribution points; the verifier under test does not depend on either.
package nitrotest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// Authority is a test Nitro CA: a root and an intermediate that issue a
// fresh leaf for every document, plus a foreign intermediate that does not
// chain to Roots.
type Authority struct {
	// Roots holds Root only; pass it as nitro.Options.Roots.
	Roots *x509.CertPool
	// Root and Intermediate are the chain's CAs, in cabundle order.
	Root, Intermediate *x509.Certificate

	interKey   *ecdsa.PrivateKey
	foreign    *x509.Certificate
	foreignKey *ecdsa.PrivateKey
}

// Fields are a document's payload values. Zero values get defaults: a
// Nitro-like module_id, the current time, and PCRs 0 to 15 of 48 zero bytes
// (a debug-mode enclave), each overridden by an entry of PCRs. Nil
// PublicKey, UserData and Nonce are encoded as null, as the Nitro Secure
// Module does.
type Fields struct {
	ModuleID  string
	Timestamp time.Time
	PCRs      map[int][]byte
	PublicKey []byte
	UserData  []byte
	Nonce     []byte
}

// Entry is one key and value of the payload map, in encoding order.
// Entries may repeat a key, which a map could not.
type Entry struct {
	Key   any
	Value any
}

// Leaf is a leaf certificate (DER) and the key it certifies.
type Leaf struct {
	Certificate []byte
	Key         *ecdsa.PrivateKey
}

// caValidity mirrors the Nitro root's validity (2019-10-28 to 2049-10-28).
var (
	caNotBefore = time.Date(2019, 10, 28, 13, 28, 5, 0, time.UTC)
	caNotAfter  = time.Date(2049, 10, 28, 14, 28, 5, 0, time.UTC)
)

// NewAuthority makes a root, an intermediate and a foreign intermediate.
func NewAuthority() (*Authority, error) {
	rootKey, err := newKey()
	if err != nil {
		return nil, err
	}
	root, err := issue(&x509.Certificate{
		Subject:               name("nitrotest.root"),
		NotBefore:             caNotBefore,
		NotAfter:              caNotAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}, nil, rootKey, rootKey)
	if err != nil {
		return nil, err
	}
	interKey, err := newKey()
	if err != nil {
		return nil, err
	}
	inter, err := issue(intermediateTemplate("nitrotest.intermediate"), root, rootKey, interKey)
	if err != nil {
		return nil, err
	}
	// The foreign intermediate has the same name as the genuine one but is
	// self-issued: certificates it signs look right and chain nowhere.
	foreignKey, err := newKey()
	if err != nil {
		return nil, err
	}
	foreign, err := issue(intermediateTemplate("nitrotest.intermediate"), nil, foreignKey, foreignKey)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(root)
	return &Authority{
		Roots:        pool,
		Root:         root,
		Intermediate: inter,
		interKey:     interKey,
		foreign:      foreign,
		foreignKey:   foreignKey,
	}, nil
}

// CABundle is the cabundle of the Authority's documents: root, then
// intermediate.
func (a *Authority) CABundle() [][]byte {
	return [][]byte{a.Root.Raw, a.Intermediate.Raw}
}

// IssueLeaf issues a leaf for a document signed at t, valid from a minute
// before t to three hours after, as Nitro's are.
func (a *Authority) IssueLeaf(t time.Time) (*Leaf, error) {
	return a.issueLeaf(t.Add(-time.Minute), t.Add(3*time.Hour), a.Intermediate, a.interKey)
}

// Entries is the payload of a document for f with leaf l, in the order the
// Nitro Secure Module writes it.
func (a *Authority) Entries(f Fields, l *Leaf) []Entry {
	f = f.withDefaults()
	pcrs := make(map[uint64][]byte, 16)
	for i := range 16 {
		pcrs[uint64(i)] = make([]byte, 48)
	}
	for i, v := range f.PCRs {
		pcrs[uint64(i)] = v
	}
	return []Entry{
		{"module_id", f.ModuleID},
		{"digest", "SHA384"},
		{"timestamp", uint64(f.Timestamp.UnixMilli())},
		{"pcrs", pcrs},
		{"certificate", l.Certificate},
		{"cabundle", a.CABundle()},
		{"public_key", f.PublicKey},
		{"user_data", f.UserData},
		{"nonce", f.Nonce},
	}
}

// Sign returns a valid document for f.
func (a *Authority) Sign(f Fields) ([]byte, error) {
	return a.SignEntries(f, nil)
}

// SignEntries returns a document for f whose payload entries were first
// passed through edit (when not nil), signed correctly with a valid leaf:
// only what edit changed is wrong with it.
func (a *Authority) SignEntries(f Fields, edit func([]Entry) []Entry) ([]byte, error) {
	f = f.withDefaults()
	l, err := a.IssueLeaf(f.Timestamp)
	if err != nil {
		return nil, err
	}
	entries := a.Entries(f, l)
	if edit != nil {
		entries = edit(entries)
	}
	payload, err := EncodeMap(entries, false)
	if err != nil {
		return nil, err
	}
	return SignPayload(payload, l.Key, cose.AlgorithmES384)
}

// SignCorruptSignature returns a document for f whose signature's last
// byte is flipped.
func (a *Authority) SignCorruptSignature(f Fields) ([]byte, error) {
	doc, err := a.Sign(f)
	if err != nil {
		return nil, err
	}
	// The signature is the COSE_Sign1's last element, so the document's
	// last byte is the signature's.
	doc[len(doc)-1] ^= 0x01
	return doc, nil
}

// SignForeignCA returns a document for f, correctly signed by its leaf,
// whose leaf was issued by a foreign intermediate of the same name; the
// cabundle is the genuine one.
func (a *Authority) SignForeignCA(f Fields) ([]byte, error) {
	f = f.withDefaults()
	l, err := a.issueLeaf(f.Timestamp.Add(-time.Minute), f.Timestamp.Add(3*time.Hour), a.foreign, a.foreignKey)
	if err != nil {
		return nil, err
	}
	return a.signWith(f, l, l.Key)
}

// SignExpiredLeaf returns a document for f whose leaf expired an hour
// before f.Timestamp.
func (a *Authority) SignExpiredLeaf(f Fields) ([]byte, error) {
	f = f.withDefaults()
	l, err := a.issueLeaf(f.Timestamp.Add(-4*time.Hour), f.Timestamp.Add(-time.Hour), a.Intermediate, a.interKey)
	if err != nil {
		return nil, err
	}
	return a.signWith(f, l, l.Key)
}

// SignWrongKey returns a document for f with a valid leaf, signed by a key
// other than the leaf's.
func (a *Authority) SignWrongKey(f Fields) ([]byte, error) {
	f = f.withDefaults()
	l, err := a.IssueLeaf(f.Timestamp)
	if err != nil {
		return nil, err
	}
	other, err := newKey()
	if err != nil {
		return nil, err
	}
	return a.signWith(f, l, other)
}

// SignAlgorithm returns a document for f whose protected header names alg;
// the signature itself is ES384 by the leaf's key.
func (a *Authority) SignAlgorithm(f Fields, alg cose.Algorithm) ([]byte, error) {
	f = f.withDefaults()
	l, err := a.IssueLeaf(f.Timestamp)
	if err != nil {
		return nil, err
	}
	payload, err := EncodeMap(a.Entries(f, l), false)
	if err != nil {
		return nil, err
	}
	return SignPayload(payload, l.Key, alg)
}

// signWith signs f's payload, carrying leaf l, with key.
func (a *Authority) signWith(f Fields, l *Leaf, key *ecdsa.PrivateKey) ([]byte, error) {
	payload, err := EncodeMap(a.Entries(f, l), false)
	if err != nil {
		return nil, err
	}
	return SignPayload(payload, key, cose.AlgorithmES384)
}

// EncodeMap encodes entries as a CBOR map in their order, definite-length
// or (as newer Nitro documents are) indefinite-length. Keys may repeat.
func EncodeMap(entries []Entry, indefinite bool) ([]byte, error) {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		return nil, err
	}
	var out []byte
	switch n := len(entries); {
	case indefinite:
		out = []byte{0xbf}
	case n < 24:
		out = []byte{0xa0 | byte(n)}
	case n < 256:
		out = []byte{0xb8, byte(n)}
	default:
		return nil, fmt.Errorf("nitrotest: %d entries, at most 255", n)
	}
	for _, e := range entries {
		for _, v := range []any{e.Key, e.Value} {
			b, err := em.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("nitrotest: encode %v: %w", e.Key, err)
			}
			out = append(out, b...)
		}
	}
	if indefinite {
		out = append(out, 0xff)
	}
	return out, nil
}

// SignPayload wraps payload in an untagged COSE_Sign1 whose protected
// header names alg, signed ES384 with key.
func SignPayload(payload []byte, key *ecdsa.PrivateKey, alg cose.Algorithm) ([]byte, error) {
	s, err := cose.NewSigner(cose.AlgorithmES384, key)
	if err != nil {
		return nil, err
	}
	headers := cose.Headers{Protected: cose.ProtectedHeader{}, Unprotected: cose.UnprotectedHeader{}}
	return cose.Sign1Untagged(rand.Reader, relabel{s, alg}, headers, payload, nil)
}

// relabel is a signer that reports alg while signing as its Signer does,
// for documents whose header lies about the algorithm.
type relabel struct {
	cose.Signer
	alg cose.Algorithm
}

// Algorithm implements cose.Signer.Algorithm.
func (r relabel) Algorithm() cose.Algorithm { return r.alg }

func (f Fields) withDefaults() Fields {
	if f.ModuleID == "" {
		f.ModuleID = "i-0123456789abcdef0-enc0123456789abcdef"
	}
	if f.Timestamp.IsZero() {
		f.Timestamp = time.Now()
	}
	// Nitro's timestamp has millisecond precision.
	f.Timestamp = f.Timestamp.Truncate(time.Millisecond)
	return f
}

func (a *Authority) issueLeaf(notBefore, notAfter time.Time, parent *x509.Certificate, parentKey crypto.Signer) (*Leaf, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	leaf, err := issue(&x509.Certificate{
		Subject:               name("i-0123456789abcdef0-enc0123456789abcdef.nitrotest"),
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
	}, parent, parentKey, key)
	if err != nil {
		return nil, err
	}
	return &Leaf{Certificate: leaf.Raw, Key: key}, nil
}

func intermediateTemplate(cn string) *x509.Certificate {
	return &x509.Certificate{
		Subject:               name(cn),
		NotBefore:             caNotBefore,
		NotAfter:              caNotAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
}

func name(cn string) pkix.Name {
	return pkix.Name{Country: []string{"US"}, Organization: []string{"IronVise Test"}, OrganizationalUnit: []string{"nitrotest"}, CommonName: cn}
}

func newKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("nitrotest: P-384 key: %w", err)
	}
	return k, nil
}

// issue signs tmpl for key's public half with parent and parentKey; a nil
// parent makes it self-signed by parentKey.
func issue(tmpl, parent *x509.Certificate, parentKey crypto.Signer, key *ecdsa.PrivateKey) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("nitrotest: serial: %w", err)
	}
	tmpl.SerialNumber = serial.Add(serial, big.NewInt(1))
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, fmt.Errorf("nitrotest: certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("nitrotest: parse issued certificate: %w", err)
	}
	return c, nil
}
