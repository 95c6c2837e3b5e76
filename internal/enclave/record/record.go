// Package record verifies, offline, the record IronVise keeps of a remote
// guard enclave's attestation (docs/enclaves.md): the AWS Nitro document
// against the pinned root at its own time, with the nonce, client key and
// pinned PCRs the session recorded. It holds the pieces of the remote
// enclave protocol that an offline verifier needs, so that verify-cert can
// check a certificate without linking any network code.
//
// # Limitations
//
// The record's URL is not covered by the document. A record with fewer
// pinned PCRs than were configured still verifies: it claims less.
package record

import (
	"bytes"
	"crypto/ecdh"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/nitro"
)

// BindingLabel prefixes the client's public key in the user_data binding:
// user_data = SHA-256(BindingLabel || client public key).
const BindingLabel = "ironvise-enclave-v1 client key"

// Sizes of the recorded fields.
const (
	// NonceSize is the size of the attestation nonce.
	NonceSize = 32
	// KeySize is the size of an X25519 public key.
	KeySize = 32
	// PCRSize is the size of a Nitro PCR (SHA-384).
	PCRSize = 48
	// maxPCRIndex is the highest PCR index a Nitro document can carry.
	maxPCRIndex = 31
)

// The ways a record fails besides the nitro sentinels, compared with
// errors.Is.
var (
	// ErrConfig means the pinned PCRs are not usable.
	ErrConfig = errors.New("ironvise/remote: invalid configuration")
	// ErrRecord means a recorded attestation is malformed or says something
	// its document does not.
	ErrRecord = errors.New("ironvise/remote: attestation record does not match its document")
)

// CheckPCRs checks pinned PCR values: PCR0 present, indexes 0 to 31, each
// SHA-384 sized and not all zeros.
func CheckPCRs(pcrs map[int][]byte) error {
	// Without PCR0 any enclave image signed by anyone would be accepted.
	if _, ok := pcrs[0]; !ok {
		return fmt.Errorf("remote: pinned PCRs must include PCR0 (the enclave image): %w", ErrConfig)
	}
	for i, v := range pcrs {
		if i < 0 || i > maxPCRIndex {
			return fmt.Errorf("remote: pinned PCR%d: index is not 0 to %d: %w", i, maxPCRIndex, ErrConfig)
		}
		if len(v) != PCRSize {
			return fmt.Errorf("remote: pinned PCR%d is %d bytes, want %d (SHA-384): %w", i, len(v), PCRSize, ErrConfig)
		}
		// An enclave started in debug mode reports all-zero PCRs, and its
		// memory is readable by the parent instance's operator: pinning
		// zeros would accept exactly that enclave.
		if bytes.Equal(v, make([]byte, PCRSize)) {
			return fmt.Errorf("remote: pinned PCR%d is all zeros, the value a debug-mode enclave reports: %w", i, ErrConfig)
		}
	}
	return nil
}

// ClientKeyBinding returns the user_data an attestation document must carry
// for the client public key pub.
func ClientKeyBinding(pub []byte) []byte {
	h := sha256.New()
	h.Write([]byte(BindingLabel))
	h.Write(pub)
	return h.Sum(nil)
}

// enclaveKey parses the document's public_key as an X25519 key.
func EnclaveKey(b []byte) (*ecdh.PublicKey, error) {
	if len(b) != KeySize {
		return nil, fmt.Errorf("document public_key is %d bytes, want a %d-byte X25519 key: %w", len(b), KeySize, nitro.ErrBinding)
	}
	k, err := ecdh.X25519().NewPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("document public_key: %w", errors.Join(err, nitro.ErrBinding))
	}
	return k, nil
}

// VerifyRecord re-verifies a recorded attestation offline: the document must
// verify against roots (nil: the pinned AWS root) at its own timestamp, with
// the recorded nonce, the recorded pinned PCRs and the user_data binding of
// the recorded client key, and EnclavePublicKey, ModuleID and Timestamp must
// be the document's. A record that passes says nothing the document does
// not; its URL is not covered (see Limitations).
func Verify(r *enclave.Remote, roots *x509.CertPool) error {
	if r == nil {
		return fmt.Errorf("remote: verify record: no record: %w", ErrRecord)
	}
	pcrs := make(map[int][]byte, len(r.PinnedPCRs))
	for i, s := range r.PinnedPCRs {
		v, err := hex.DecodeString(s)
		if err != nil {
			return fmt.Errorf("remote: verify record: pinned PCR%d %q: %w", i, s, errors.Join(err, ErrRecord))
		}
		pcrs[i] = v
	}
	if err := CheckPCRs(pcrs); err != nil {
		return fmt.Errorf("remote: verify record: %w", errors.Join(err, ErrRecord))
	}
	if len(r.ClientPublicKey) != KeySize {
		return fmt.Errorf("remote: verify record: client public key is %d bytes, want %d: %w", len(r.ClientPublicKey), KeySize, ErrRecord)
	}
	if len(r.Nonce) != NonceSize {
		return fmt.Errorf("remote: verify record: nonce is %d bytes, want %d: %w", len(r.Nonce), NonceSize, ErrRecord)
	}
	doc, err := nitro.Verify(r.Document, nitro.Options{
		Roots:    roots,
		Nonce:    r.Nonce,
		PCRs:     pcrs,
		UserData: ClientKeyBinding(r.ClientPublicKey),
	})
	if err != nil {
		return fmt.Errorf("remote: verify record: %w", err)
	}
	if _, err := EnclaveKey(doc.PublicKey); err != nil {
		return fmt.Errorf("remote: verify record: %w", err)
	}
	// The record's copies of the document's fields are what readers look
	// at; a record edited to show another key, module or time is refused.
	if !bytes.Equal(r.EnclavePublicKey, doc.PublicKey) {
		return fmt.Errorf("remote: verify record: enclave public key is not the document's: %w", ErrRecord)
	}
	if r.ModuleID != doc.ModuleID {
		return fmt.Errorf("remote: verify record: module id %q, document says %q: %w", r.ModuleID, doc.ModuleID, ErrRecord)
	}
	if !r.Timestamp.Equal(doc.Timestamp) {
		return fmt.Errorf("remote: verify record: timestamp %s, document says %s: %w",
			r.Timestamp.UTC().Format(time.RFC3339Nano), doc.Timestamp.UTC().Format(time.RFC3339Nano), ErrRecord)
	}
	return nil
}
