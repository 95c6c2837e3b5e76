package nitro

import (
	"errors"
	"testing"
)

// FuzzVerify feeds Verify arbitrary bytes: it must never panic, must fail
// with one of the sentinels, and may succeed only with a complete document.
func FuzzVerify(f *testing.F) {
	a := testAuthority(f)
	good, err := a.Sign(testFields())
	if err != nil {
		f.Fatal(err)
	}
	real := realDocument(f)

	// A valid test document: mutations explore every field of the payload.
	f.Add(good)
	// A genuine AWS document: the real encoding, four-certificate bundle.
	f.Add(real)
	// The valid document tagged 18: the tagged branch of the envelope.
	f.Add(append([]byte{0xd2}, good...))
	// Empty input: the length check before any decoding.
	f.Add([]byte{})
	// A bare four-element array header: the envelope with nothing in it.
	f.Add([]byte{0x84})
	// Four empty elements: empty protected header, no payload, no signature.
	f.Add([]byte{0x84, 0x40, 0xa0, 0x40, 0x40})
	// A byte string claiming 2^64-1 bytes: length headers must not allocate.
	f.Add([]byte{0x84, 0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	// Deep nesting in the protected header: the decoder's depth limit.
	f.Add(append([]byte{0x84, 0x58, 0x40}, make([]byte, 64)...))
	// An indefinite-length envelope, which COSE forbids.
	f.Add([]byte{0x9f, 0x40, 0xa0, 0x40, 0x40, 0xff})
	// The valid document cut at the start of its signature.
	f.Add(good[:len(good)-96])

	f.Fuzz(func(t *testing.T, doc []byte) {
		d, err := Verify(doc, testOptions(a))
		if err != nil {
			if d != nil {
				t.Fatalf("Verify returned a document with error %v", err)
			}
			for _, s := range []error{ErrMalformed, ErrSignature, ErrChain, ErrNonce, ErrPCR, ErrBinding} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("Verify: %v wraps no sentinel", err)
		}
		if d.Certificate == nil || len(d.CABundle) == 0 || d.ModuleID == "" || len(d.PCRs) == 0 {
			t.Fatalf("Verify accepted an incomplete document: %+v", d)
		}
	})
}
