package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/sqlite"
)

// TestStatementsPreparedOnReuse: opening prepares nothing; a query is
// prepared once it ran twice, and keeps answering the same afterwards.
func TestStatementsPreparedOnReuse(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := s.PreparedCount(); n != 0 {
		t.Fatalf("%d statements prepared at open; want none", n)
	}
	size := func() int64 {
		t.Helper()
		var n int64
		if err := s.View(ctx, func(tx ledger.ReadTx) error {
			var err error
			n, err = tx.LogSize(ctx)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	size()
	if n := s.PreparedCount(); n != 0 {
		t.Fatalf("%d statements prepared after one query; want none", n)
	}
	size()
	if n := s.PreparedCount(); n != 1 {
		t.Fatalf("%d statements prepared after the query ran twice; want 1", n)
	}
	if got := size(); got != 0 {
		t.Fatalf("log size through the prepared statement %d; want 0", got)
	}
	if n := s.PreparedCount(); n != 1 {
		t.Fatalf("%d statements prepared; want still 1", n)
	}
}
