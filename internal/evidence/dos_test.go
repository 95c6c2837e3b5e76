package evidence

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// measure runs fn and returns the bytes it allocated in total and the
// peak of the live heap above the level before it (sampled every 200µs
// through runtime.MemStats). Total allocation bounds the peak from above;
// neither depends on the machine's speed, unlike a wall-clock limit.
func measure(fn func()) (total, peak uint64) {
	runtime.GC()
	var a runtime.MemStats
	runtime.ReadMemStats(&a)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > a.HeapAlloc && m.HeapAlloc-a.HeapAlloc > peak {
				peak = m.HeapAlloc - a.HeapAlloc
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	var b runtime.MemStats
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc, peak
}

// bigCertificate is the fixture certificate padded with n bogus proof
// nodes (the shape of the issue 23 item 7 attack: 205 MB of proof nodes),
// signed by key.
func bigCertificate(t *testing.T, n int, key *ledger.SigningKey) []byte {
	t.Helper()
	_, _, data := fixtureCertificate(t)
	c, _, _, err := ParseCertificate(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c.InclusionProof.Nodes = append(c.InclusionProof.Nodes, CertNode{Level: 3, Index: int64(i), Hash: ledger.Hash{1, 2, 3}})
	}
	out, err := signCertificate(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVerifierMemoryBounded is issue 23 item 7. A forged certificate (not
// signed by the pinned key) costs at most a few times its size, because the
// signature is checked before anything is decoded; one the pinned issuer
// signed stays under a fixed multiple of its size too. Before, both cost
// about 20 times the file size.
func TestVerifierMemoryBounded(t *testing.T) {
	attacker, _ := ledger.SigningKeyFromSeed(make([]byte, 32))
	const nodes = 200_000 // about 19 MB
	forged := bigCertificate(t, nodes, attacker)
	signed := bigCertificate(t, nodes, testIssuerKey(t))
	for _, tc := range []struct {
		name              string
		doc               []byte
		maxPeak, maxTotal float64 // multiples of the document's size
	}{
		// Checked before decoding: canonicalisation is all it costs.
		{"forged", forged, 5, 6},
		// Signed by the pinned issuer: decoded and checked in full.
		{"issuer-signed", signed, 9, 14},
	} {
		var res *CertificateResult
		total, peak := measure(func() { res, _ = VerifyCertificate(tc.doc, testIssuerPub(t)) })
		size := float64(len(tc.doc))
		t.Logf("%s: %d bytes, peak heap +%d (%.1fx), allocated %d (%.1fx)", tc.name, len(tc.doc), peak, float64(peak)/size, total, float64(total)/size)
		if res.Valid {
			t.Fatalf("%s: a certificate padded with %d proof nodes verified", tc.name, nodes)
		}
		if tc.name == "forged" && res.Pillars[0].OK {
			t.Fatalf("forged: issuer signature %+v; want it failing", res.Pillars[0])
		}
		if float64(peak) > tc.maxPeak*size || float64(total) > tc.maxTotal*size {
			t.Errorf("%s: verifying %d bytes raised the heap by %d (%.1fx) and allocated %d (%.1fx); want at most %.0fx and %.0fx",
				tc.name, len(tc.doc), peak, float64(peak)/size, total, float64(total)/size, tc.maxPeak, tc.maxTotal)
		}
	}
}

// TestCertificateSizeCap: the default cap is low enough that a stranger's
// file cannot cost an auditor gigabytes, and a document over the cap is
// refused before it is parsed.
func TestCertificateSizeCap(t *testing.T) {
	if MaxCertificateBytes > 64<<20 {
		t.Fatalf("MaxCertificateBytes = %d; want at most 64 MiB by default (--max-bytes raises it)", MaxCertificateBytes)
	}
	doc := make([]byte, 2<<20)
	var err error
	got, _ := measure(func() { _, err = VerifyCertificateWith(doc, testIssuerPub(t), VerifyOptions{MaxBytes: 1 << 20}) })
	if !errors.Is(err, ErrMalformedCertificate) {
		t.Fatalf("over the limit: %v; want ErrMalformedCertificate", err)
	}
	if got > 64<<10 {
		t.Errorf("refusing an oversized document allocated %d bytes; want it refused before parsing", got)
	}
}
