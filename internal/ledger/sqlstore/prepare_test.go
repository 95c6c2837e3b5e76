package sqlstore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/sqlite"
	"github.com/ironvise/ironvise/internal/ledger/sqlstore"
)

// TestStatementsPreparedOnReuse: on a driver whose connections parse
// every query anew (the PostgreSQL store's case; SQLite's keep theirs, see
// the next test), opening prepares nothing; a query is prepared once it
// ran twice, and keeps answering the same afterwards. The database is
// SQLite through database/sql alone, with just the table the query reads.
func TestStatementsPreparedOnReuse(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	s := sqlstore.New(sqlstore.Dialect{Name: "sqlite", Migrations: fstest.MapFS{
		"0001_events.sql": {Data: []byte("CREATE TABLE events (log_index INTEGER PRIMARY KEY);")},
	}}, db, db, nil)
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
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

// TestNoStatementsPreparedWhenTheConnectionKeepsThem: the SQLite store's
// connections keep the statements they ran (internal/ledger/sqlite), so the
// store prepares none of its own, which would parse each hot query once
// more.
func TestNoStatementsPreparedWhenTheConnectionKeepsThem(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 3 {
		if err := s.View(ctx, func(tx ledger.ReadTx) error {
			_, err := tx.LogSize(ctx)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.PreparedCount(); n != 0 {
		t.Fatalf("%d statements prepared by the store; want none", n)
	}
}
