package nitro

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"
)

// realDocument is a genuine AWS-issued document (testdata/README.md).
func realDocument(t testing.TB) []byte {
	t.Helper()
	b64, err := os.ReadFile("testdata/eternis_example_attestation.b64")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(b64)))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// realOptions are the values the real document carries.
func realOptions(t testing.TB) Options {
	return Options{
		Nonce: mustHex(t, "0000000000000000000000000000000000000001"),
		PCRs: map[int][]byte{
			0: make([]byte, 48),
			3: mustHex(t, "671ca1e328f75015b2aeee60639cc5252bc835d8bb690444d1f8e2bf4260f73dc1b71e07a14a770c7d0becac6eb3b53f"),
			4: mustHex(t, "d352cfa31b8dc5f4856c9fa8181b19ed12f5da23883ac4ec729530f50dc1d37f1ac3876a7af39bd4de7a2aead14d14cb"),
		},
		UserData:  mustHex(t, "1220c682bc6c814a6748f490c8c8e48e5c40c505e5c99b0b617b85cdc71d236f2a3812200000000000000000000000000000000000000000000000000000000000000000"),
		PublicKey: []byte("dummy"),
	}
}

// TestRealDocument verifies a document AWS issued, with the pinned root at
// the document's own timestamp.
func TestRealDocument(t *testing.T) {
	doc, err := Verify(realDocument(t), realOptions(t))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got, want := doc.ModuleID, "i-0bbf1bfe232b8c2ce-enc0191ba35c9d1b77a"; got != want {
		t.Errorf("ModuleID = %q; want %q", got, want)
	}
	if got, want := doc.Timestamp, time.Date(2024, 9, 9, 19, 49, 12, 400_000_000, time.UTC); !got.Equal(want) {
		t.Errorf("Timestamp = %v; want %v", got, want)
	}
	if len(doc.PCRs) != 16 || len(doc.CABundle) != 4 {
		t.Errorf("%d PCRs, %d cabundle certificates; want 16, 4", len(doc.PCRs), len(doc.CABundle))
	}
	if got := doc.CABundle[0].Subject.CommonName; got != "aws.nitro-enclaves" {
		t.Errorf("cabundle[0] CN = %q; want aws.nitro-enclaves", got)
	}
}

// TestRealDocumentRefused checks the real document against what it does
// not show: each check must still bite on genuine AWS bytes.
func TestRealDocumentRefused(t *testing.T) {
	a := testAuthority(t)
	tamper := func(raw []byte) []byte {
		// Change one character of the module_id inside the signed payload.
		i := bytes.Index(raw, []byte("i-0bbf1bfe"))
		if i < 0 {
			t.Fatal("module_id not found in the document")
		}
		raw[i+2] = '1'
		return raw
	}
	tests := []struct {
		name string
		doc  func([]byte) []byte
		opt  func(*Options)
		want error
	}{
		{"today, long after the leaf expired", nil, func(o *Options) { o.Time = time.Now() }, ErrChain},
		{"against the test root", nil, func(o *Options) { o.Roots = a.Roots }, ErrChain},
		{"another nonce", nil, func(o *Options) { o.Nonce = []byte{1} }, ErrNonce},
		{"another PCR3", nil, func(o *Options) { o.PCRs = map[int][]byte{3: make([]byte, 48)} }, ErrPCR},
		{"another user_data", nil, func(o *Options) { o.UserData = []byte("x") }, ErrBinding},
		{"payload byte changed", tamper, nil, ErrSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := realDocument(t)
			if tt.doc != nil {
				raw = tt.doc(raw)
			}
			opt := realOptions(t)
			if tt.opt != nil {
				tt.opt(&opt)
			}
			if _, err := Verify(raw, opt); !errors.Is(err, tt.want) {
				t.Fatalf("Verify: %v; want %v", err, tt.want)
			}
		})
	}
}
