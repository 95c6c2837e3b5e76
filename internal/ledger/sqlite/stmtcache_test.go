package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// keptDB is a one-connection pool over a new database file, with a table
// t of the rows 1..n.
func keptDB(t *testing.T, n int) (*sql.DB, *sql.Conn) {
	t.Helper()
	db, err := openDB(filepath.Join(t.TempDir(), "kept.db") + "?" + pragmas)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (x INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := db.ExecContext(ctx, `INSERT INTO t (x) VALUES (?)`, i); err != nil {
			t.Fatal(err)
		}
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return db, c
}

// kept is the statement the connection keeps for query (nil when none),
// and how many it keeps.
func kept(t *testing.T, c *sql.Conn, query string) (*keptStmt, int) {
	t.Helper()
	var k *keptStmt
	n := 0
	if err := c.Raw(func(dc any) error {
		kc, ok := dc.(*keepingConn)
		if !ok {
			return fmt.Errorf("the driver connection is %T, not one that keeps its statements", dc)
		}
		k, n = kc.kept[query], len(kc.kept)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return k, n
}

func sum(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) int {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	total := 0
	for rows.Next() {
		var x int
		if err := rows.Scan(&x); err != nil {
			t.Fatal(err)
		}
		total += x
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

// TestConnectionParsesAStatementOnce: a query run again on a connection
// runs the statement the connection kept from its first run, for queries
// and for statements that change rows, with the answers of a fresh parse.
func TestConnectionParsesAStatementOnce(t *testing.T) {
	ctx := context.Background()
	_, c := keptDB(t, 4)
	const sel = `SELECT x FROM t WHERE x >= ? ORDER BY x`
	const upd = `UPDATE t SET x = x + 10 WHERE x = ?`
	_, before := kept(t, c, sel)
	if got := sum(t, c, sel, 2); got != 2+3+4 {
		t.Fatalf("sum %d; want 9", got)
	}
	first, n := kept(t, c, sel)
	if first == nil {
		t.Fatalf("the connection keeps %d statements, not the query's", n)
	}
	for i := 1; i <= 3; i++ {
		if _, err := c.ExecContext(ctx, upd, i); err != nil {
			t.Fatal(err)
		}
	}
	if got := sum(t, c, sel, 2); got != 11+12+13+4 {
		t.Fatalf("sum after the updates %d; want 40", got)
	}
	again, n := kept(t, c, sel)
	if again != first {
		t.Fatal("the query was parsed again: the connection keeps another statement for it")
	}
	if u, _ := kept(t, c, upd); u == nil || u.busy || again.busy {
		t.Fatalf("the update kept %v, statements busy after their runs: %v", u, again.busy)
	}
	if n != before+2 {
		t.Fatalf("the connection keeps %d statements, %d before; want 2 more (the query and the update)", n, before)
	}
}

// TestKeptStatementWhileItsRowsAreOpen: the same query run inside the loop
// over its own rows gets a statement of its own; both answer in full, and
// the kept one is free again once its rows are closed, early or not.
func TestKeptStatementWhileItsRowsAreOpen(t *testing.T) {
	ctx := context.Background()
	db, c := keptDB(t, 3)
	c.Close() // the transaction below needs the one connection
	const sel = `SELECT x FROM t ORDER BY x`
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	outer, inner := 0, 0
	for rows.Next() {
		var x int
		if err := rows.Scan(&x); err != nil {
			t.Fatal(err)
		}
		outer += x
		inner += sum(t, tx, sel)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if outer != 6 || inner != 18 {
		t.Fatalf("outer sum %d, inner sums %d; want 6 and 18", outer, inner)
	}
	// Closed after one row: the statement is reset, not left mid-way.
	rows, err = tx.QueryContext(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	rows.Close()
	if got := sum(t, tx, sel); got != 6 {
		t.Fatalf("sum after a query closed early %d; want 6", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if k, n := kept(t, c2, sel); k == nil || k.busy {
		t.Fatalf("kept %v of %d after the transaction; want the query's, free", k, n)
	}
}

// TestKeptStatementSeesSchemaChanges: a kept statement answers for the
// schema of its run, not of its parse (SQLite prepares it again).
func TestKeptStatementSeesSchemaChanges(t *testing.T) {
	ctx := context.Background()
	_, c := keptDB(t, 1)
	cols := func() []string {
		t.Helper()
		rows, err := c.QueryContext(ctx, `SELECT * FROM t`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		names, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	if got := strings.Join(cols(), ","); got != "x" {
		t.Fatalf("columns %q; want x", got)
	}
	if _, err := c.ExecContext(ctx, `ALTER TABLE t ADD COLUMN y TEXT`); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cols(), ","); got != "x,y" {
		t.Fatalf("columns after ALTER TABLE %q; want x,y", got)
	}
}

// TestKeptStatementsBoundedAndErrors: a query that does not parse is
// refused as before and not kept; past maxKept statements a connection
// runs queries without keeping them; a query cancelled while it runs leaves
// its statement usable.
func TestKeptStatementsBoundedAndErrors(t *testing.T) {
	ctx := context.Background()
	_, c := keptDB(t, 2)
	if _, err := c.ExecContext(ctx, `SELECT nope FROM missing`); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("a query of a missing table: %v; want its error", err)
	}
	if k, _ := kept(t, c, `SELECT nope FROM missing`); k != nil {
		t.Fatal("a query that did not parse is kept")
	}
	for i := range maxKept + 10 {
		if got := sum(t, c, fmt.Sprintf(`SELECT x + %d FROM t WHERE x = 1`, i)); got != 1+i {
			t.Fatalf("query %d: %d; want %d", i, got, 1+i)
		}
	}
	if _, n := kept(t, c, ""); n != maxKept {
		t.Fatalf("the connection keeps %d statements; want the bound, %d", n, maxKept)
	}

	const slow = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT count(*) FROM n`
	_, c2 := keptDB(t, 1)
	if _, err := c2.ExecContext(ctx, slow, 10); err != nil {
		t.Fatal(err)
	}
	first, _ := kept(t, c2, slow)
	if first == nil {
		t.Fatal("the query was not kept")
	}
	// Cancelled while it runs (a context already done would stop
	// database/sql before the driver): SQLite is interrupted inside the
	// kept statement, which must come back reset and free.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := c2.ExecContext(cctx, slow, 1_000_000_000); err == nil {
		t.Fatal("a query of a billion rows ran to its end within 30 ms")
	}
	if k, _ := kept(t, c2, slow); k != first || k.busy {
		t.Fatalf("after the interrupted run the query keeps %p (busy %v); want %p, free", k, k != nil && k.busy, first)
	}
	var n int
	if err := c2.QueryRowContext(ctx, slow, 10).Scan(&n); err != nil || n != 10 {
		t.Fatalf("the query after a cancelled run: %d, %v; want 10", n, err)
	}
}
