package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// testDB is a SQLite file in a temporary directory; single opens its
// backends with OpenSingle.
type testDB struct {
	path   string
	single bool
}

func newTestDB(t testing.TB) ledgertest.DB {
	return &testDB{path: filepath.Join(t.TempDir(), "ledger.db")}
}

func (d *testDB) Backend(t testing.TB) ledger.Backend {
	t.Helper()
	open := Open
	if d.single {
		open = OpenSingle
	}
	b, err := open(context.Background(), d.path)
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

// lastTriggers returns each trigger's newest definition (a later
// migration may drop and recreate one under its name).
func lastTriggers(ddl string) [][]string {
	var out [][]string
	at := map[string]int{}
	for _, m := range triggerRE.FindAllStringSubmatch(ddl, -1) {
		if i, ok := at[m[1]]; ok {
			out[i] = m
			continue
		}
		at[m[1]] = len(out)
		out = append(out, m)
	}
	return out
}

// allMigrations is the DDL of every migration, whose triggers Tamper and
// Unguard take down and put back.
func allMigrations(t testing.TB) string {
	t.Helper()
	ents, err := migrations.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		data, err := migrations.ReadFile("migrations/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// Tamper drops the append-only triggers, runs the statement and puts the
// triggers back, in one transaction (test-only: an attacker with write
// access to the file can do the same).
func (d *testDB) Tamper(t testing.TB, query string, args ...any) {
	t.Helper()
	db := d.raw(t)
	defer db.Close()
	ddl := allMigrations(t)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	trs := lastTriggers(ddl)
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

// Unguard drops the append-only triggers once and recreates them on
// restore, so the randomized tamper test does not change the schema (and
// make every connection prepare its statements again) on each edit.
func (d *testDB) Unguard(t testing.TB) (func(...ledgertest.Stmt) error, func()) {
	t.Helper()
	db, err := sql.Open("sqlite", d.path+"?_txlock=immediate&_pragma=synchronous(0)&"+pragmas)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	ddl := allMigrations(t)
	trs := lastTriggers(ddl)
	run, closeStmts := ledgertest.PreparedTamper(db, nil, "")
	var drop, create []ledgertest.Stmt
	for _, m := range trs {
		drop = append(drop, ledgertest.Stmt{Query: "DROP TRIGGER " + m[1]})
		create = append(create, ledgertest.Stmt{Query: m[0]})
	}
	if err := run(drop...); err != nil {
		db.Close()
		t.Fatalf("drop the append-only triggers: %v", err)
	}
	return run, func() {
		defer db.Close()
		closeStmts()
		if err := run(create...); err != nil {
			t.Errorf("recreate the append-only triggers: %v", err)
		}
	}
}

func (d *testDB) HasTruncate() bool { return false }

func TestConformance(t *testing.T) {
	ledgertest.Run(t, ledgertest.Harness{Name: "sqlite", NewDB: newTestDB})
}

// TestConformanceSingle runs the suite on OpenSingle's one connection,
// where every read waits for the writer's connection: a read made while
// the same goroutine holds a write would hang here, and the tests that
// open several ledgers on one file (ResumeInOtherProcess, CrashRecovery,
// Reopen) have each hold its one connection. The randomized tampering,
// which only reads, stays with TestConformance.
func TestConformanceSingle(t *testing.T) {
	ledgertest.Run(t, ledgertest.Harness{Name: "sqlite-single", NewDB: func(t testing.TB) ledgertest.DB {
		return &testDB{path: filepath.Join(t.TempDir(), "ledger.db"), single: true}
	}, Skip: map[string]string{"TamperRandomized": "the same reads as TestConformance's; about 40 s"}})
}

// TestOpenSingleReadsTakeNoWriteLock: OpenSingle's reads run on the
// writer's connection, whose transactions begin IMMEDIATE; a read must
// still begin deferred, or a standalone exec reading the ledger would hold
// the write lock against serve's commits for as long as it reads.
func TestOpenSingleReadsTakeNoWriteLock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenSingle(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	err = s.View(ctx, func(tx ledger.ReadTx) error {
		if _, err := tx.LogSize(ctx); err != nil {
			return err
		}
		// Another process takes the write lock while the read is open.
		c, err := other.Conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return fmt.Errorf("another writer could not take the write lock during a read: %w", err)
		}
		_, err = c.ExecContext(ctx, "ROLLBACK")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
