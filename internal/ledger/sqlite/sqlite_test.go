package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// testDB is a SQLite file in a temporary directory.
type testDB struct{ path string }

func newTestDB(t testing.TB) ledgertest.DB {
	return &testDB{path: filepath.Join(t.TempDir(), "ledger.db")}
}

func (d *testDB) Backend(t testing.TB) ledger.Backend {
	t.Helper()
	b, err := Open(context.Background(), d.path)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	return b
}

func (d *testDB) raw(t testing.TB) *sql.DB {
	db, err := sql.Open("sqlite", d.path+"?"+pragmas)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func (d *testDB) Exec(t testing.TB, query string, args ...any) error {
	db := d.raw(t)
	defer db.Close()
	_, err := db.Exec(query, args...)
	return err
}

var triggerRE = regexp.MustCompile(`(?s)CREATE TRIGGER (\w+) .*?END;`)

// Tamper drops the append-only triggers, runs the statement and puts the
// triggers back, in one transaction (test-only: an attacker with write
// access to the file can do the same).
func (d *testDB) Tamper(t testing.TB, query string, args ...any) {
	t.Helper()
	db := d.raw(t)
	defer db.Close()
	ddl, err := migrations.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	trs := triggerRE.FindAllStringSubmatch(string(ddl), -1)
	for _, m := range trs {
		if _, err := tx.Exec("DROP TRIGGER " + m[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(query, args...); err != nil {
		t.Fatalf("tamper %q: %v", query, err)
	}
	for _, m := range trs {
		if _, err := tx.Exec(m[0]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func (d *testDB) HasTruncate() bool { return false }

func TestConformance(t *testing.T) {
	ledgertest.Run(t, ledgertest.Harness{Name: "sqlite", NewDB: newTestDB})
}
