package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
)

// # Why each connection keeps its statements
//
// database/sql hands a query with arguments to the driver as text, and the
// driver parses it every time: SQLite's parser, compiled to Go, costs tens
// of microseconds a statement, and a standalone exec ran 78 parses (48
// queries of the ledger, the transactions' BEGIN and COMMIT, the pragmas)
// for about 25 distinct statements. A prepared *sql.Stmt of the pool does
// not help a one-connection pool: preparing needs the connection its own
// transaction holds, so sqlstore could only prepare a statement after its
// second run, and parsed it a third time to do so. Here each connection
// keeps the statements it parsed, by their text, and runs them again;
// SQLite re-prepares a kept statement itself when the schema changes.

// maxKept bounds the statements one connection keeps. The ledger runs a
// fixed set (a few hundred with the batched inserts' variants); a query
// past the bound runs as before, parsed each time.
const maxKept = 512

// connector opens the driver's connections with a statement cache each.
type connector struct {
	dsn string
	drv driver.Driver
}

// openDB is sql.Open("sqlite", dsn) with each connection keeping its
// statements.
func openDB(dsn string) (*sql.DB, error) {
	// The driver registered as "sqlite", taken from a pool that never
	// connects.
	probe, err := sql.Open("sqlite", "")
	if err != nil {
		return nil, err
	}
	drv := probe.Driver()
	probe.Close()
	return sql.OpenDB(connector{dsn: dsn, drv: drv}), nil
}

func (c connector) Connect(context.Context) (driver.Conn, error) {
	cn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return newKeepingConn(cn)
}

func (c connector) Driver() driver.Driver { return c.drv }

// inner is what keepingConn needs of the driver's connection: everything
// database/sql looks for, which modernc.org/sqlite's connection has.
type inner interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// keepingConn is a driver connection that keeps the statements it ran.
// database/sql uses a connection from one goroutine at a time, so it needs
// no lock; a kept statement is still busy while rows it returned are open
// (a query run inside another's loop), and a second use of it meanwhile
// gets a statement of its own.
type keepingConn struct {
	inner
	kept map[string]*keptStmt
}

type keptStmt struct {
	st   driver.Stmt
	busy bool
}

func newKeepingConn(cn driver.Conn) (driver.Conn, error) {
	in, ok := cn.(inner)
	if !ok {
		cn.Close()
		return nil, errors.New("sqlite: the driver's connection lacks a method database/sql needs")
	}
	return &keepingConn{inner: in, kept: map[string]*keptStmt{}}, nil
}

// take returns the kept statement of query, prepared on first use, marked
// busy; nil when it is busy already or the connection keeps no more (the
// caller then runs the query unkept).
func (c *keepingConn) take(ctx context.Context, query string) (*keptStmt, error) {
	k := c.kept[query]
	if k == nil {
		if len(c.kept) >= maxKept {
			return nil, nil
		}
		st, err := c.inner.PrepareContext(ctx, query)
		if err != nil {
			return nil, err
		}
		k = &keptStmt{st: st}
		c.kept[query] = k
	}
	if k.busy {
		return nil, nil
	}
	k.busy = true
	return k, nil
}

func (c *keepingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	k, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return c.inner.ExecContext(ctx, query, args)
	}
	defer func() { k.busy = false }()
	return k.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *keepingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	k, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return c.inner.QueryContext(ctx, query, args)
	}
	rows, err := k.st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		k.busy = false
		return nil, err
	}
	return &keptRows{Rows: rows, k: k}, nil
}

// Close finalizes the kept statements, then closes the connection.
func (c *keepingConn) Close() error {
	var errs []error
	for q, k := range c.kept {
		errs = append(errs, k.st.Close())
		delete(c.kept, q)
	}
	return errors.Join(append(errs, c.inner.Close())...)
}

// keptRows gives its statement back when closed.
type keptRows struct {
	driver.Rows
	k *keptStmt
}

func (r *keptRows) Close() error {
	err := r.Rows.Close()
	r.k.busy = false
	return err
}
