package nitro

import (
	"crypto/sha256"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"
)

// rootPEM is the AWS Nitro Enclaves Root-G1 certificate (CN=aws.nitro-enclaves,
// O=Amazon, OU=AWS, C=US, ECDSA P-384, valid 2019-10-28 to 2049-10-28), the
// public certificate AWS distributes as AWS_NitroEnclaves_Root-G1.zip.
//
//go:embed root.pem
var rootPEM []byte

// RootFingerprint is the SHA-256 of the DER of the AWS Nitro Enclaves
// Root-G1 certificate, as AWS publishes it. The embedded root.pem must hash
// to it, or Verify refuses every document that relies on the pinned root.
const RootFingerprint = "64:1A:03:21:A3:E2:44:EF:E4:56:46:31:95:D6:06:31:7E:D7:CD:CC:3C:17:56:E0:98:93:F3:C6:8F:79:BB:5B"

// pinnedRoots is the pool holding only the embedded root, built once; its
// error is returned by every Verify that needs it (never a panic at init:
// importing the package must not crash the binary).
var pinnedRoots = sync.OnceValues(func() (*x509.CertPool, error) {
	return rootPool(rootPEM, RootFingerprint)
})

// rootPool parses the single certificate in pemBytes and returns a pool
// holding it, after checking that its DER hashes to fingerprint (colon hex,
// as published).
func rootPool(pemBytes []byte, fingerprint string) (*x509.CertPool, error) {
	block, rest := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("nitro: pinned root: no PEM certificate: %w", ErrChain)
	}
	if len(strings.TrimSpace(string(rest))) != 0 {
		// A second certificate appended to root.pem would be trusted too;
		// the pin covers exactly one.
		return nil, fmt.Errorf("nitro: pinned root: data after the certificate: %w", ErrChain)
	}
	sum := sha256.Sum256(block.Bytes)
	got := colonHex(sum[:])
	// The pin is what makes the embedded file trustworthy: a root edited in
	// the source tree (or a lookalike certificate pasted in its place) would
	// otherwise let its holder mint attestation documents.
	if !strings.EqualFold(got, fingerprint) {
		return nil, fmt.Errorf("nitro: pinned root: SHA-256 is %s, published %s: %w", got, fingerprint, ErrChain)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("nitro: pinned root: %w: %w", ErrChain, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool, nil
}

// colonHex formats b as upper-case hex pairs joined by colons.
func colonHex(b []byte) string {
	h := strings.ToUpper(hex.EncodeToString(b))
	var sb strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(h[i : i+2])
	}
	return sb.String()
}
