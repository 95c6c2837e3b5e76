package postgres

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// testDB is a fresh schema in the test database; the connection's
// search_path selects it.
type testDB struct {
	url    string
	schema string
}

func newTestDB(t testing.TB) ledgertest.DB {
	d := &testDB{}
	d.url, d.schema = ledgertest.PostgresSchema(t, "ivt", "the PostgreSQL backend tests")
	return d
}

func (d *testDB) Backend(t testing.TB) ledger.Backend {
	t.Helper()
	b, err := Open(context.Background(), d.url, 8)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	return b
}

func rebind(q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

func (d *testDB) Exec(t testing.TB, query string, args ...any) error {
	db, err := sql.Open("pgx", d.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(rebind(query), args...)
	return err
}

var evidenceTables = []string{"events", "keys", "log_hashes", "checkpoints", "meta", "sessions"}

// Tamper disables the user triggers, runs the statement and enables them
// again, in one transaction (test-only: the table owner can do the same).
func (d *testDB) Tamper(t testing.TB, query string, args ...any) {
	t.Helper()
	db, err := sql.Open("pgx", d.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, tb := range evidenceTables {
		if _, err := tx.Exec("ALTER TABLE " + tb + " DISABLE TRIGGER USER"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(rebind(query), args...); err != nil {
		t.Fatalf("tamper %q: %v", query, err)
	}
	for _, tb := range evidenceTables {
		if _, err := tx.Exec("ALTER TABLE " + tb + " ENABLE TRIGGER USER"); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// Unguard disables the user triggers once and enables them on restore;
// tamper's transactions do not wait for their commit to be flushed.
func (d *testDB) Unguard(t testing.TB) (func(...ledgertest.Stmt) error, func()) {
	t.Helper()
	db, err := sql.Open("pgx", d.url)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	toggle := func(how string) error {
		for _, tb := range evidenceTables {
			if _, err := db.Exec("ALTER TABLE " + tb + " " + how + " TRIGGER USER"); err != nil {
				return err
			}
		}
		return nil
	}
	if err := toggle("DISABLE"); err != nil {
		db.Close()
		t.Fatalf("disable the append-only triggers: %v", err)
	}
	run, closeStmts := ledgertest.PreparedTamper(db, rebind, "SET LOCAL synchronous_commit = off")
	return run, func() {
		defer db.Close()
		closeStmts()
		if err := toggle("ENABLE"); err != nil {
			t.Errorf("enable the append-only triggers: %v", err)
		}
	}
}

func (d *testDB) HasTruncate() bool { return true }

func TestConformance(t *testing.T) {
	if os.Getenv(ledgertest.PostgresURLEnv) == "" {
		t.Skipf("%s is not set: skipping the PostgreSQL backend tests (CI sets it; .ci/run shows how to start a scratch server)", ledgertest.PostgresURLEnv)
	}
	ledgertest.Run(t, ledgertest.Harness{Name: "postgres", NewDB: newTestDB})
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, secret string }{
		{"postgres://u:secret@h:5432/db", "secret"},
		{"postgres://u@h/db", ""},
		{"postgresql://h/db?sslmode=disable", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got := Redact(tc.in)
			if tc.secret != "" && (strings.Contains(got, tc.secret) || !strings.Contains(got, "****")) {
				t.Fatalf("Redact(%q) = %q; want the password replaced by ****", tc.in, got)
			}
			if tc.secret == "" && got != tc.in {
				t.Fatalf("Redact(%q) = %q; want it unchanged", tc.in, got)
			}
		})
	}
}
