package nitro

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"

	"github.com/ironvise/ironvise/internal/enclave/nitro/nitrotest"
)

var (
	authorityOnce sync.Once
	authority     *nitrotest.Authority
	authorityErr  error
)

// testAuthority is one nitrotest.Authority shared by the package's tests
// (making one costs three P-384 keys).
func testAuthority(t testing.TB) *nitrotest.Authority {
	t.Helper()
	authorityOnce.Do(func() { authority, authorityErr = nitrotest.NewAuthority() })
	if authorityErr != nil {
		t.Fatalf("NewAuthority: %v", authorityErr)
	}
	return authority
}

var (
	testNonce    = bytes.Repeat([]byte{0x5a}, 32)
	testUserData = bytes.Repeat([]byte{0xd7}, 32)
	testPubKey   = bytes.Repeat([]byte{0x9b}, 32)
	testPCR0     = bytes.Repeat([]byte{0xab}, 48)
	testTime     = time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)
)

func testFields() nitrotest.Fields {
	return nitrotest.Fields{
		ModuleID:  "i-0abc-enc0def",
		Timestamp: testTime,
		PCRs:      map[int][]byte{0: testPCR0, 8: bytes.Repeat([]byte{0x08}, 48)},
		PublicKey: testPubKey,
		UserData:  testUserData,
		Nonce:     testNonce,
	}
}

func testOptions(a *nitrotest.Authority) Options {
	return Options{
		Roots:     a.Roots,
		Nonce:     testNonce,
		PCRs:      map[int][]byte{0: testPCR0},
		UserData:  testUserData,
		PublicKey: testPubKey,
	}
}

func TestVerifyValid(t *testing.T) {
	a := testAuthority(t)
	raw, err := a.Sign(testFields())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Verify(raw, testOptions(a))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if doc.ModuleID != "i-0abc-enc0def" {
		t.Errorf("ModuleID = %q; want %q", doc.ModuleID, "i-0abc-enc0def")
	}
	if !doc.Timestamp.Equal(testTime) {
		t.Errorf("Timestamp = %v; want %v", doc.Timestamp, testTime)
	}
	if doc.Digest != "SHA384" {
		t.Errorf("Digest = %q; want SHA384", doc.Digest)
	}
	if len(doc.PCRs) != 16 {
		t.Errorf("len(PCRs) = %d; want 16", len(doc.PCRs))
	}
	if !bytes.Equal(doc.PCRs[0], testPCR0) || !bytes.Equal(doc.PCRs[8], bytes.Repeat([]byte{0x08}, 48)) || !bytes.Equal(doc.PCRs[1], make([]byte, 48)) {
		t.Errorf("PCRs = %x; want PCR0 ab…, PCR8 08…, the rest zero", doc.PCRs)
	}
	for _, f := range []struct {
		name      string
		got, want []byte
	}{{"PublicKey", doc.PublicKey, testPubKey}, {"UserData", doc.UserData, testUserData}, {"Nonce", doc.Nonce, testNonce}} {
		if !bytes.Equal(f.got, f.want) {
			t.Errorf("%s = %x; want %x", f.name, f.got, f.want)
		}
	}
	if doc.Certificate == nil || doc.Certificate.Subject.CommonName == "" {
		t.Errorf("Certificate = %v; want the leaf", doc.Certificate)
	}
	if len(doc.CABundle) != 2 || !doc.CABundle[0].Equal(a.Root) || !doc.CABundle[1].Equal(a.Intermediate) {
		t.Errorf("CABundle = %v; want [root intermediate]", doc.CABundle)
	}
}

// TestVerifyAccepts covers encodings and options a genuine document may
// use: each must verify.
func TestVerifyAccepts(t *testing.T) {
	a := testAuthority(t)
	tests := []struct {
		name string
		make func() ([]byte, error)
		opt  func(*Options)
	}{
		{
			name: "tagged COSE_Sign1 (tag 18)",
			make: func() ([]byte, error) {
				raw, err := a.Sign(testFields())
				return append([]byte{0xd2}, raw...), err
			},
		},
		{
			name: "indefinite-length payload map, as newer Nitro documents",
			make: func() ([]byte, error) {
				l, err := a.IssueLeaf(testTime)
				if err != nil {
					return nil, err
				}
				p, err := nitrotest.EncodeMap(a.Entries(testFields(), l), true)
				if err != nil {
					return nil, err
				}
				return nitrotest.SignPayload(p, l.Key, cose.AlgorithmES384)
			},
		},
		{
			name: "cabundle starting at an intermediate that chains to the root",
			make: func() ([]byte, error) {
				return a.SignEntries(testFields(), func(e []nitrotest.Entry) []nitrotest.Entry {
					return set(e, "cabundle", [][]byte{a.Intermediate.Raw})
				})
			},
		},
		{
			name: "unknown payload key is ignored",
			make: func() ([]byte, error) {
				return a.SignEntries(testFields(), func(e []nitrotest.Entry) []nitrotest.Entry {
					return append(e, nitrotest.Entry{Key: "future_field", Value: "x"})
				})
			},
		},
		{
			name: "no UserData or PublicKey bound",
			make: func() ([]byte, error) { return a.Sign(testFields()) },
			opt:  func(o *Options) { o.UserData, o.PublicKey = nil, nil },
		},
		{
			name: "Time inside the leaf's validity",
			make: func() ([]byte, error) { return a.Sign(testFields()) },
			opt:  func(o *Options) { o.Time = testTime.Add(2 * time.Hour) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, err := tt.make()
			if err != nil {
				t.Fatal(err)
			}
			opt := testOptions(a)
			if tt.opt != nil {
				tt.opt(&opt)
			}
			if _, err := Verify(raw, opt); err != nil {
				t.Fatalf("Verify: %v; want nil", err)
			}
		})
	}
}

// set replaces the value of key (every occurrence) in e.
func set(e []nitrotest.Entry, key string, v any) []nitrotest.Entry {
	out := make([]nitrotest.Entry, len(e))
	for i, x := range e {
		if x.Key == key {
			x.Value = v
		}
		out[i] = x
	}
	return out
}

// drop removes key from e.
func drop(e []nitrotest.Entry, key string) []nitrotest.Entry {
	var out []nitrotest.Entry
	for _, x := range e {
		if x.Key != key {
			out = append(out, x)
		}
	}
	return out
}

func TestVerifyRefuses(t *testing.T) {
	a := testAuthority(t)
	f := testFields()
	edit := func(fn func([]nitrotest.Entry) []nitrotest.Entry) func() ([]byte, error) {
		return func() ([]byte, error) { return a.SignEntries(f, fn) }
	}
	valid := func() ([]byte, error) { return a.Sign(f) }
	tests := []struct {
		name     string
		make     func() ([]byte, error)
		opt      func(*Options)
		want     error
		wantText string
	}{
		// Signature.
		{name: "corrupted signature", make: func() ([]byte, error) { return a.SignCorruptSignature(f) }, want: ErrSignature},
		{name: "signed with a key other than the leaf's", make: func() ([]byte, error) { return a.SignWrongKey(f) }, want: ErrSignature},
		{name: "alg ES512", make: func() ([]byte, error) { return a.SignAlgorithm(f, cose.AlgorithmES512) }, want: ErrSignature, wantText: "want ES384"},
		{name: "alg ES256", make: func() ([]byte, error) { return a.SignAlgorithm(f, cose.AlgorithmES256) }, want: ErrSignature, wantText: "want ES384"},
		{name: "alg PS384", make: func() ([]byte, error) { return a.SignAlgorithm(f, cose.AlgorithmPS384) }, want: ErrSignature, wantText: "want ES384"},
		{name: "alg EdDSA", make: func() ([]byte, error) { return a.SignAlgorithm(f, cose.AlgorithmEdDSA) }, want: ErrSignature, wantText: "want ES384"},

		// Chain.
		{name: "leaf issued by a foreign CA", make: func() ([]byte, error) { return a.SignForeignCA(f) }, want: ErrChain},
		{name: "test chain against the pinned AWS root", make: valid, opt: func(o *Options) { o.Roots = nil }, want: ErrChain},
		{name: "leaf expired before the timestamp", make: func() ([]byte, error) { return a.SignExpiredLeaf(f) }, want: ErrChain, wantText: "expired"},
		{name: "Time after the leaf expired", make: valid, opt: func(o *Options) { o.Time = testTime.Add(4 * time.Hour) }, want: ErrChain, wantText: "expired"},
		{name: "Time before the leaf was issued", make: valid, opt: func(o *Options) { o.Time = testTime.Add(-time.Hour) }, want: ErrChain},
		{name: "cabundle[0] a foreign self-signed CA", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			return set(e, "cabundle", [][]byte{selfSigned(t), a.Intermediate.Raw})
		}), want: ErrChain, wantText: "cabundle[0]"},
		{name: "cabundle without the intermediate", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			return set(e, "cabundle", [][]byte{a.Root.Raw})
		}), want: ErrChain},

		// Nonce.
		{name: "replayed document with an old nonce", make: valid, opt: func(o *Options) { o.Nonce = bytes.Repeat([]byte{0x11}, 32) }, want: ErrNonce, wantText: "nonce is 5a5a"},
		{name: "nonce null", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "nonce", nil) }), want: ErrNonce, wantText: "no nonce"},
		{name: "nonce key absent", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return drop(e, "nonce") }), want: ErrNonce},
		{name: "nonce only under another case (Nonce)", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			return append(set(e, "nonce", nil), nitrotest.Entry{Key: "Nonce", Value: testNonce})
		}), want: ErrNonce},
		{name: "nonce a prefix of the one sent", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "nonce", testNonce[:16]) }), want: ErrNonce},
		{name: "Options.Nonce empty", make: valid, opt: func(o *Options) { o.Nonce = nil }, want: ErrNonce},
		{name: "Options.Nonce empty and the document's nonce empty", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			return set(e, "nonce", []byte{})
		}), opt: func(o *Options) { o.Nonce = []byte{} }, want: ErrNonce, wantText: "Options.Nonce is empty"},

		// PCRs.
		{name: "PCR0 differs", make: valid, opt: func(o *Options) { o.PCRs = map[int][]byte{0: bytes.Repeat([]byte{0xcd}, 48)} }, want: ErrPCR, wantText: "PCR0 is abababababababab…, pinned cdcdcdcdcdcdcdcd…"},
		{name: "PCR0 differs only in its last byte", make: valid, opt: func(o *Options) {
			w := bytes.Clone(testPCR0)
			w[47] ^= 1
			o.PCRs = map[int][]byte{0: w}
		}, want: ErrPCR, wantText: "abab" + strings.Repeat("ab", 45) + "aa"},
		{name: "pinned PCR absent from the document", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			return set(e, "pcrs", map[uint64][]byte{0: testPCR0})
		}), opt: func(o *Options) { o.PCRs = map[int][]byte{0: testPCR0, 2: make([]byte, 48)} }, want: ErrPCR, wantText: "PCR2 missing"},
		{name: "pinned PCR index out of range", make: valid, opt: func(o *Options) { o.PCRs = map[int][]byte{40: testPCR0} }, want: ErrPCR, wantText: "PCR40: no such index"},
		{name: "pinned PCR negative index", make: valid, opt: func(o *Options) { o.PCRs = map[int][]byte{-1: testPCR0} }, want: ErrPCR, wantText: "PCR-1: no such index"},

		// Bindings.
		{name: "user_data differs", make: valid, opt: func(o *Options) { o.UserData = bytes.Repeat([]byte{0x01}, 32) }, want: ErrBinding, wantText: "user_data is"},
		{name: "user_data null but bound", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "user_data", nil) }), want: ErrBinding},
		{name: "public_key differs", make: valid, opt: func(o *Options) { o.PublicKey = bytes.Repeat([]byte{0x01}, 32) }, want: ErrBinding, wantText: "public_key is"},

		// Malformed envelope.
		{name: "empty", make: func() ([]byte, error) { return nil, nil }, want: ErrMalformed},
		{name: "not CBOR", make: func() ([]byte, error) { return []byte("hello, attestation"), nil }, want: ErrMalformed},
		{name: "truncated", make: func() ([]byte, error) { b, err := a.Sign(f); return b[:len(b)/2], err }, want: ErrMalformed},
		{name: "trailing byte", make: func() ([]byte, error) { b, err := a.Sign(f); return append(b, 0x00), err }, want: ErrMalformed},
		{name: "array of three", make: func() ([]byte, error) { return []byte{0x83, 0x40, 0xa0, 0x40}, nil }, want: ErrMalformed},
		{name: "tag 18 around garbage", make: func() ([]byte, error) { return []byte{0xd2, 0x01}, nil }, want: ErrMalformed},
		{name: "oversized (user_data of 70000 bytes)", make: func() ([]byte, error) {
			g := f
			g.UserData = make([]byte, 70000)
			return a.Sign(g)
		}, want: ErrMalformed, wantText: "at most 65536"},

		// Malformed payload, correctly signed.
		{name: "digest SHA256", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "digest", "SHA256") }), want: ErrMalformed, wantText: `digest is "SHA256"`},
		{name: "duplicate nonce key", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			return append(e, nitrotest.Entry{Key: "nonce", Value: testNonce})
		}), want: ErrMalformed},
		{name: "duplicate PCR index", make: func() ([]byte, error) {
			l, err := a.IssueLeaf(testTime)
			if err != nil {
				return nil, err
			}
			pcrs, err := nitrotest.EncodeMap([]nitrotest.Entry{{Key: 0, Value: testPCR0}, {Key: 0, Value: make([]byte, 48)}}, false)
			if err != nil {
				return nil, err
			}
			p, err := nitrotest.EncodeMap(set(a.Entries(f, l), "pcrs", cbor.RawMessage(pcrs)), false)
			if err != nil {
				return nil, err
			}
			return nitrotest.SignPayload(p, l.Key, cose.AlgorithmES384)
		}, want: ErrMalformed},
		{name: "certificate absent", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return drop(e, "certificate") }), want: ErrMalformed},
		{name: "module_id absent", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return drop(e, "module_id") }), want: ErrMalformed},
		{name: "timestamp absent", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return drop(e, "timestamp") }), want: ErrMalformed},
		{name: "pcrs absent", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return drop(e, "pcrs") }), want: ErrMalformed},
		{name: "module_id a byte string", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "module_id", []byte("i-0abc")) }), want: ErrMalformed},
		{name: "timestamp a text string", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "timestamp", "1741964966535") }), want: ErrMalformed},
		{name: "timestamp negative", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "timestamp", -1) }), want: ErrMalformed},
		{name: "timestamp a float", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "timestamp", 1741964966535.0) }), want: ErrMalformed},
		{name: "timestamp tagged as a time", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			return set(e, "timestamp", cbor.Tag{Number: 1, Content: uint64(1741964966)})
		}), want: ErrMalformed},
		{name: "nonce a text string", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "nonce", string(testNonce)) }), want: ErrMalformed},
		{name: "certificate not DER", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "certificate", []byte{0x30, 0x00}) }), want: ErrMalformed},
		{name: "pcrs with 33 entries", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			m := map[uint64][]byte{}
			for i := range 33 {
				m[uint64(i)] = make([]byte, 48)
			}
			return set(e, "pcrs", m)
		}), want: ErrMalformed},
		{name: "PCR index 32", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			return set(e, "pcrs", map[uint64][]byte{0: testPCR0, 32: make([]byte, 48)})
		}), want: ErrMalformed, wantText: "PCR index 32"},
		{name: "PCR of 20 bytes", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			return set(e, "pcrs", map[uint64][]byte{0: make([]byte, 20)})
		}), want: ErrMalformed, wantText: "PCR0 is 20 bytes"},
		{name: "cabundle of 9 certificates", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry {
			b := [][]byte{a.Root.Raw}
			for range 8 {
				b = append(b, a.Intermediate.Raw)
			}
			return set(e, "cabundle", b)
		}), want: ErrMalformed, wantText: "at most 8"},
		{name: "cabundle empty", make: edit(func(e []nitrotest.Entry) []nitrotest.Entry { return set(e, "cabundle", [][]byte{}) }), want: ErrMalformed},
		{name: "payload not a map", make: func() ([]byte, error) {
			l, err := a.IssueLeaf(testTime)
			if err != nil {
				return nil, err
			}
			return nitrotest.SignPayload([]byte{0x80}, l.Key, cose.AlgorithmES384)
		}, want: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, err := tt.make()
			if err != nil {
				t.Fatal(err)
			}
			opt := testOptions(a)
			if tt.opt != nil {
				tt.opt(&opt)
			}
			doc, err := Verify(raw, opt)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify: %v; want %v", err, tt.want)
			}
			if doc != nil {
				t.Errorf("Verify returned a document with error %v", err)
			}
			if tt.wantText != "" && !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Verify: %q; want it to say %q", err, tt.wantText)
			}
			for _, other := range []error{ErrMalformed, ErrSignature, ErrChain, ErrNonce, ErrPCR, ErrBinding} {
				if other != tt.want && errors.Is(err, other) {
					t.Errorf("Verify: %v; is also %v", err, other)
				}
			}
		})
	}
}

// TestVerifySignatureCurve checks that a leaf key on a curve other than
// P-384 is refused even when the signature would verify on its curve.
func TestVerifySignatureCurve(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "p256"}, NotBefore: testTime, NotAfter: testTime.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cose.NewSigner(cose.AlgorithmES256, key)
	if err != nil {
		t.Fatal(err)
	}
	msg := cose.NewSign1Message()
	msg.Payload = []byte{0xa0}
	// Sign as ES256 under an ES384 header: go-cose checks the label, so
	// the header is set after signing.
	msg.Headers.Protected.SetAlgorithm(cose.AlgorithmES256)
	if err := msg.Sign(rand.Reader, nil, s); err != nil {
		t.Fatal(err)
	}
	msg.Headers.Protected.SetAlgorithm(cose.AlgorithmES384)
	if err := verifySignature(msg, leaf); !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "P-384") {
		t.Fatalf("verifySignature: %v; want ErrSignature naming P-384", err)
	}
}

// selfSigned is a CA certificate that chains to nothing.
func selfSigned(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "nitrotest.root"},
		NotBefore: testTime.AddDate(-1, 0, 0), NotAfter: testTime.AddDate(1, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
