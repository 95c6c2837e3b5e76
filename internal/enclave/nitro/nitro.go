// Package nitro verifies AWS Nitro Enclaves attestation documents.
//
// API contract (the implementation is being written; keep these names):
package nitro

import (
	"crypto/x509"
	"errors"
	"time"
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
	// Time is when the chain must be valid; zero means the document's own
	// timestamp.
	Time time.Time
}

// Document is a verified attestation document.
type Document struct {
	ModuleID    string
	Timestamp   time.Time
	Digest      string
	PCRs        map[int][]byte
	Certificate *x509.Certificate
	CABundle    []*x509.Certificate
	PublicKey   []byte
	UserData    []byte
	Nonce       []byte
}

// The ways a document fails, compared with errors.Is.
var (
	// ErrMalformed: not a COSE_Sign1 Nitro document.
	ErrMalformed = errors.New("nitro: malformed attestation document")
	// ErrSignature: the COSE signature does not verify with the leaf key.
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

// Verify parses doc and verifies it against opt.
func Verify(doc []byte, opt Options) (*Document, error) {
	return nil, errors.New("nitro: not implemented yet")
}
