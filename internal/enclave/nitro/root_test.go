package nitro

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/enclave/nitro/nitrotest"
)

// publishedRootSHA256 is the fingerprint AWS publishes for the Nitro
// Enclaves Root-G1, written here a second time so that editing root.pem and
// RootFingerprint together still fails this test.
const publishedRootSHA256 = "64:1A:03:21:A3:E2:44:EF:E4:56:46:31:95:D6:06:31:7E:D7:CD:CC:3C:17:56:E0:98:93:F3:C6:8F:79:BB:5B"

func TestPinnedRootFingerprint(t *testing.T) {
	if RootFingerprint != publishedRootSHA256 {
		t.Fatalf("RootFingerprint = %s; want %s", RootFingerprint, publishedRootSHA256)
	}
	block, _ := pem.Decode(rootPEM)
	if block == nil {
		t.Fatal("root.pem holds no PEM block")
	}
	sum := sha256.Sum256(block.Bytes)
	if got := colonHex(sum[:]); got != publishedRootSHA256 {
		t.Fatalf("SHA-256 of root.pem = %s; want %s", got, publishedRootSHA256)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cert.Subject.String(), "CN=aws.nitro-enclaves,OU=AWS,O=Amazon,C=US"; got != want {
		t.Errorf("root subject = %q; want %q", got, want)
	}
	if got, want := cert.NotAfter.Format(time.DateOnly), "2049-10-28"; got != want {
		t.Errorf("root NotAfter = %s; want %s", got, want)
	}
	if _, err := pinnedRoots(); err != nil {
		t.Fatalf("pinnedRoots: %v", err)
	}
}

func TestRootPoolRefuses(t *testing.T) {
	a := testAuthority(t)
	otherPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Root.Raw})
	tests := []struct {
		name        string
		pem         []byte
		fingerprint string
		wantText    string
	}{
		{"another certificate under the published fingerprint", otherPEM, RootFingerprint, "published " + RootFingerprint},
		{"the genuine root under another fingerprint", rootPEM, strings.Replace(RootFingerprint, "64:1A", "64:1B", 1), "SHA-256 is " + RootFingerprint},
		{"a second certificate appended", append(append([]byte{}, rootPEM...), otherPEM...), RootFingerprint, "data after the certificate"},
		{"no PEM", []byte("not a certificate"), RootFingerprint, "no PEM certificate"},
		{"a private key block", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}), RootFingerprint, "no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool, err := rootPool(tt.pem, tt.fingerprint)
			if !errors.Is(err, ErrChain) || pool != nil {
				t.Fatalf("rootPool: %v, %v; want nil, ErrChain", pool, err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("rootPool: %q; want it to say %q", err, tt.wantText)
			}
		})
	}
}

// TestVerifyPinnedRootError checks that a pinned root that fails its
// fingerprint makes Verify fail (not panic, not fall back to no roots). It
// replaces the package's pinnedRoots, so it must not run in parallel.
func TestVerifyPinnedRootError(t *testing.T) {
	a := testAuthority(t)
	raw, err := a.Sign(nitrotest.Fields{Nonce: testNonce, Timestamp: testTime})
	if err != nil {
		t.Fatal(err)
	}
	saved := pinnedRoots
	t.Cleanup(func() { pinnedRoots = saved })
	// The test's own root under the published fingerprint: were the check
	// missing, this document would verify.
	pinnedRoots = func() (*x509.CertPool, error) {
		return rootPool(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Root.Raw}), RootFingerprint)
	}
	if _, err := Verify(raw, Options{Nonce: testNonce}); !errors.Is(err, ErrChain) || !strings.Contains(err.Error(), "pinned root") {
		t.Fatalf("Verify: %v; want ErrChain from the pinned root", err)
	}
}
