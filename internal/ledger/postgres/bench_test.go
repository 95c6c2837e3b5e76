package postgres

import (
	"testing"

	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// BenchmarkAppendDurable: ledger.md §10 target ≥ 3,000 events/s from 16
// concurrent sessions on PostgreSQL (synchronous_commit on, group commit).
func BenchmarkAppendDurable(b *testing.B) {
	db := newTestDB(b)
	ledgertest.BenchAppend(b, db.Backend(b), 16)
}
