package postgres

import (
	"testing"

	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// BenchmarkAppendDurable: docs/design/ledger.md#performance-targets target ≥
// 3,000 events/s from 16 concurrent sessions on PostgreSQL
// (synchronous_commit on, group commit).
func BenchmarkAppendDurable(b *testing.B) {
	for _, c := range []struct {
		name           string
		writers, batch int
	}{
		{"sessions=16/writers=1/batch=1", 1, 1},
		{"sessions=16/writers=4/batch=1", 4, 1},
		{"sessions=16/writers=1/batch=6", 1, 6},
	} {
		b.Run(c.name, func(b *testing.B) {
			db := newTestDB(b)
			ledgertest.BenchAppend(b, db.Backend(b), 16, c.writers, c.batch)
		})
	}
}
