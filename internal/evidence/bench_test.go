package evidence

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// bigSession writes a sealed session of n events (observations in batches
// of 500, a key rotation every 2,000) to a fresh in-memory ledger.
func bigSession(b *testing.B, n int) (*ledger.Ledger, uuid.UUID) {
	b.Helper()
	ctx := context.Background()
	l := newTestLedger(b)
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "benchmark", SandboxTier: "native"})
	if err != nil {
		b.Fatal(err)
	}
	written := 2 // genesis and prompt_input
	for written < n-1 {
		k := min(500, n-1-written)
		recs := make([]ledger.Record, k)
		for i := range recs {
			recs[i] = ledger.Record{Type: ledger.TypeObservation, Payload: map[string]any{"step": written + i, "content": fmt.Sprintf("line %d of a typical command output: total 8, drwxr-xr-x", written+i)}}
		}
		if _, err := l.AppendBatch(ctx, s.ID, recs); err != nil {
			b.Fatal(err)
		}
		written += k
		if written%2000 == 0 && written < n-2 {
			if _, err := l.RotateKey(ctx, s.ID); err != nil {
				b.Fatal(err)
			}
			written++
		}
	}
	l.EndSession(ctx, s.ID, ledger.StatusCompleted)
	if _, err := l.Seal(ctx, s.ID, "bench"); err != nil {
		b.Fatal(err)
	}
	return l, s.ID
}

// BenchmarkCertificateExport10k measures BuildCertificate of a sealed
// 10,000-event session (read, prove every event, canonicalise, sign).
func BenchmarkCertificateExport10k(b *testing.B) {
	l, id := bigSession(b, 10_000)
	ctx := context.Background()
	var size int
	for b.Loop() {
		data, err := BuildCertificate(ctx, l, id)
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB/cert")
	b.ReportMetric(10_000*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkCertificateVerify10k measures the offline verification of that
// certificate: parse, issuer signature, chain, 10,000 event signatures,
// 10,000 inclusion paths and the findings check.
func BenchmarkCertificateVerify10k(b *testing.B) {
	l, id := bigSession(b, 10_000)
	data, err := BuildCertificate(context.Background(), l, id)
	if err != nil {
		b.Fatal(err)
	}
	pin := l.IssuerPublicKey()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		res, err := VerifyCertificate(data, pin)
		if err != nil || !res.Valid {
			b.Fatalf("%v %+v", err, res.Pillars)
		}
	}
	b.ReportMetric(10_000*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
