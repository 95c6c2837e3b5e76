package nitro

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// Limits on what Verify accepts. A genuine document is about 4.5 KiB with
// 16 PCRs and a four-certificate bundle; the limits leave room for growth
// while bounding the work an attacker can make a verifier do.
const (
	// MaxDocumentSize is the largest document Verify decodes, in bytes.
	MaxDocumentSize = 64 << 10
	// MaxCABundle is the most certificates a cabundle may hold.
	MaxCABundle = 8
	// MaxPCRs is the most PCRs a document may carry (indexes 0 to 31).
	MaxPCRs = 32
)

// payload is the attestation document's CBOR map. Pointer and slice fields
// are nil when the key is absent or null, which is how a missing required
// field is told from a present one.
type payload struct {
	ModuleID    *string           `cbor:"module_id"`
	Digest      *string           `cbor:"digest"`
	Timestamp   *uint64           `cbor:"timestamp"`
	PCRs        map[uint64][]byte `cbor:"pcrs"`
	Certificate []byte            `cbor:"certificate"`
	CABundle    [][]byte          `cbor:"cabundle"`
	PublicKey   []byte            `cbor:"public_key"`
	UserData    []byte            `cbor:"user_data"`
	Nonce       []byte            `cbor:"nonce"`
}

// payloadMode decodes the payload strictly. Its options are constant, so
// an error is a bug; it is returned by Verify rather than panicking at init.
var payloadMode = sync.OnceValues(func() (cbor.DecMode, error) {
	m, err := cbor.DecOptions{
		// Two "nonce" (or two PCR 0) entries would let the verifier and
		// another reader of the same signed bytes see different values.
		DupMapKey: cbor.DupMapKeyEnforcedAPF,
		// Case-insensitive matching would make "Nonce" and "nonce" land
		// in one field: the same ambiguity by another route.
		FieldNameMatching: cbor.FieldNameMatchingCaseSensitive,
		// Bounds against documents built to exhaust memory or stack.
		MaxNestedLevels:  8,
		MaxArrayElements: 16,
		MaxMapPairs:      MaxPCRs,
		// Nitro's own encoder emits indefinite-length maps in newer
		// documents, so they are accepted; tags are never used.
		IndefLength: cbor.IndefLengthAllowed,
		TagsMd:      cbor.TagsForbidden,
		UTF8:        cbor.UTF8RejectInvalid,
	}.DecMode()
	if err != nil {
		return nil, bug(err)
	}
	return m, nil
})

// bug marks a failure that cannot happen unless this package is wrong.
func bug(err error) error {
	return fmt.Errorf("nitro: internal error (a bug): %w", err)
}

// decodePayload decodes and checks the shape of the payload; it returns the
// fields with their Go types, the certificates still in DER.
func decodePayload(b []byte) (*payload, time.Time, error) {
	mode, err := payloadMode()
	if err != nil {
		return nil, time.Time{}, err
	}
	var p payload
	if err := mode.Unmarshal(b, &p); err != nil {
		return nil, time.Time{}, fmt.Errorf("nitro: payload: %w: %w", ErrMalformed, err)
	}
	switch {
	case p.ModuleID == nil || *p.ModuleID == "":
		return nil, time.Time{}, fmt.Errorf("nitro: payload: module_id missing: %w", ErrMalformed)
	case p.Digest == nil:
		return nil, time.Time{}, fmt.Errorf("nitro: payload: digest missing: %w", ErrMalformed)
	case *p.Digest != "SHA384":
		// The PCRs are SHA-384 measurements; a document claiming another
		// digest is not one this verifier knows how to compare.
		return nil, time.Time{}, fmt.Errorf("nitro: payload: digest is %q, want \"SHA384\": %w", *p.Digest, ErrMalformed)
	case p.Timestamp == nil || *p.Timestamp == 0:
		return nil, time.Time{}, fmt.Errorf("nitro: payload: timestamp missing: %w", ErrMalformed)
	case *p.Timestamp > math.MaxInt64:
		return nil, time.Time{}, fmt.Errorf("nitro: payload: timestamp %d out of range: %w", *p.Timestamp, ErrMalformed)
	case len(p.PCRs) == 0:
		return nil, time.Time{}, fmt.Errorf("nitro: payload: pcrs missing: %w", ErrMalformed)
	case len(p.PCRs) > MaxPCRs:
		return nil, time.Time{}, fmt.Errorf("nitro: payload: %d pcrs, at most %d: %w", len(p.PCRs), MaxPCRs, ErrMalformed)
	case len(p.Certificate) == 0:
		return nil, time.Time{}, fmt.Errorf("nitro: payload: certificate missing: %w", ErrMalformed)
	case len(p.CABundle) == 0:
		return nil, time.Time{}, fmt.Errorf("nitro: payload: cabundle missing: %w", ErrMalformed)
	case len(p.CABundle) > MaxCABundle:
		return nil, time.Time{}, fmt.Errorf("nitro: payload: cabundle of %d certificates, at most %d: %w", len(p.CABundle), MaxCABundle, ErrMalformed)
	}
	for i, v := range p.PCRs {
		if i >= MaxPCRs {
			return nil, time.Time{}, fmt.Errorf("nitro: payload: PCR index %d, at most %d: %w", i, MaxPCRs-1, ErrMalformed)
		}
		if n := len(v); n != 32 && n != 48 && n != 64 {
			return nil, time.Time{}, fmt.Errorf("nitro: payload: PCR%d is %d bytes, want 32, 48 or 64: %w", i, n, ErrMalformed)
		}
	}
	for i, c := range p.CABundle {
		if len(c) == 0 {
			return nil, time.Time{}, fmt.Errorf("nitro: payload: cabundle[%d] empty: %w", i, ErrMalformed)
		}
	}
	return &p, time.UnixMilli(int64(*p.Timestamp)).UTC(), nil
}
