package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

func openFile(b *testing.B, path string) ledger.Backend {
	s, err := Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAppendDurable: docs/design/ledger.md#performance-targets target ≥
// 5,000 events/s from 8 concurrent sessions on SQLite (WAL, synchronous=FULL,
// group commit). Sub-benchmarks vary the writers per session and the events
// per call; with one synchronous writer per session throughput is bounded by
// 8 divided by the disk's fsync latency.
func BenchmarkAppendDurable(b *testing.B) {
	for _, c := range appendCases {
		b.Run(c.name, func(b *testing.B) {
			ledgertest.BenchAppend(b, openFile(b, filepath.Join(b.TempDir(), "ledger.db")), 8, c.writers, c.batch)
		})
	}
}

var appendCases = []struct {
	name           string
	writers, batch int
}{
	{"sessions=8/writers=1/batch=1", 1, 1},
	{"sessions=8/writers=4/batch=1", 4, 1},
	{"sessions=8/writers=1/batch=6", 1, 6},
}

// verifyFixture is a sealed 20,000-event session.
var verifyFixture = onceFixture(mkdirTemp, func(b *testing.B, dir string) *ledgertest.VerifyFixture {
	return ledgertest.NewVerifyFixture(b, openFile(b, filepath.Join(dir, "ledger.db")), 20000)
})

// BenchmarkVerifySession: docs/design/ledger.md#performance-targets target ≥
// 30,000 events/s (all five checks of a sealed 20,000-event session).
func BenchmarkVerifySession(b *testing.B) {
	ledgertest.BenchVerify(b, verifyFixture(b))
}

// fullFixture is 2,000 sealed sessions of 11 events (the size of an
// `ironvise exec`), on /dev/shm when there is one so that building it does
// not wait on 2,000 seals' fsyncs.
var fullFixture = onceFixture(mkdirTempFast, func(b *testing.B, dir string) *ledgertest.VerifyFullFixture {
	return ledgertest.NewVerifyFullFixture(b, openFile(b, filepath.Join(dir, "ledger.db")), 2000, 11)
})

// BenchmarkVerifyFull2000: `serve --verify-full` over 2,000 exec-sized
// sessions within 3 s on 2 cores.
func BenchmarkVerifyFull2000(b *testing.B) {
	ledgertest.BenchVerifyFull(b, fullFixture(b))
}

// bigLog is a 1,000,000-event log.
var bigLog = onceFixture(mkdirTemp, func(b *testing.B, dir string) *ledgertest.BigLog {
	path := filepath.Join(dir, "big.db")
	return ledgertest.NewBigLog(b, func() ledger.Backend { return openFile(b, path) }, 1_000_000)
})

// BenchmarkInclusionProof1M: docs/design/ledger.md#performance-targets target
// < 1 ms per inclusion proof in a 1,000,000-event log.
func BenchmarkInclusionProof1M(b *testing.B) {
	ledgertest.BenchInclusionProof(b, bigLog(b))
}

// BenchmarkAppendDurableTmpfs is BenchmarkAppendDurable with the database
// on /dev/shm: the same transactions and fsync calls, on storage whose
// fsync costs nothing, which measures the ledger's own per-event cost
// apart from the disk's sync latency.
func BenchmarkAppendDurableTmpfs(b *testing.B) {
	for _, c := range appendCases {
		b.Run(c.name, func(b *testing.B) {
			dir, err := os.MkdirTemp("/dev/shm", "ironvise-bench-")
			if err != nil {
				b.Skipf("no /dev/shm: %v", err)
			}
			defer os.RemoveAll(dir)
			ledgertest.BenchAppend(b, openFile(b, filepath.Join(dir, "ledger.db")), 8, c.writers, c.batch)
		})
	}
}
