// Package sqlstore implements [ledger.Backend] over database/sql, shared by
// the SQLite and PostgreSQL backends: the two differ only in their
// [Dialect] (placeholders, how the write lock is taken, row locks, and
// their embedded migrations).
//
// # Usage
//
// Backends build a Store from their connection pools and migrate it:
//
//	st := sqlstore.New(dialect, writer, reader)
//	if err := st.Migrate(ctx); err != nil { … }
//	l, err := ledger.New(ctx, st, opts)
//
// # Write lock
//
// Every ledger write runs in one transaction that holds a database-wide
// lock (SQLite: BEGIN IMMEDIATE on the single writer connection;
// PostgreSQL: a transaction advisory lock), so log indexes and per-session
// sequences are assigned by one writer at a time across processes, and
// the session rows of the batch are also locked with FOR UPDATE where the
// database has row locks.
//
// # Limitations
//
// Queries are plain SQL over database/sql; backend-specific bulk paths
// (COPY) are not used, since group commit already makes one multi-row
// INSERT per table per batch.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Dialect is what differs between databases.
type Dialect struct {
	// Name is the backend kind ("sqlite", "postgres").
	Name string
	// Numbered placeholders ($1, $2, …) instead of "?".
	Numbered bool
	// LockWrite is run first in every write transaction (empty when the
	// transaction itself takes the lock, as SQLite's BEGIN IMMEDIATE does).
	LockWrite string
	// ForUpdate is appended to row reads inside write transactions.
	ForUpdate string
	// ViewOptions are the options of read transactions.
	ViewOptions *sql.TxOptions
	// Migrations holds NNNN_name.sql files applied in order.
	Migrations fs.FS
	// MigrationLock, when set, is run before migrating (PostgreSQL: an
	// advisory lock so that instances starting together migrate once).
	MigrationLock string
	// Notify, when set, is run in every write transaction that adds
	// events, before it commits (PostgreSQL: pg_notify, delivered on
	// commit); Listen, when set, implements ledger.CommitNotifier.
	Notify string
	Listen func(ctx context.Context, db *sql.DB) (<-chan struct{}, error)
	// AfterCommit, when set, is run after every write transaction that
	// committed (SQLite: it wakes the checkpointer that keeps the WAL
	// checkpoint off the commit's path). It must not block.
	AfterCommit func()
	// ConnKeepsStatements means each driver connection keeps the
	// statements it parsed (SQLite's, internal/ledger/sqlite): the store
	// then prepares none of its own.
	ConnKeepsStatements bool
}

// Store is a ledger.Backend over database/sql.
type Store struct {
	d      Dialect
	w, r   *sql.DB
	closer func() error

	// stmtMu guards stmts, the prepared statements by pool and SQL text:
	// SQLite would otherwise parse every statement of every batch again.
	stmtMu sync.Mutex
	stmts  map[stmtKey]*sql.Stmt
	// missed counts the runs of a query that found no prepared
	// statement; the second one gets it prepared (prepareMissed). closed
	// stops preparing once Close released the statements.
	missed map[stmtKey]int
	closed bool

	// commits counts the write transactions committed (see WriteCommits).
	commits atomic.Uint64
}

// WriteCommits returns how many write transactions this Store committed:
// each is one durable commit (one fsync of the WAL on SQLite), so tests
// and benchmarks count what a piece of work costs in commits without
// timing it.
func (s *Store) WriteCommits() uint64 { return s.commits.Load() }

type stmtKey struct {
	db    *sql.DB
	query string
}

// New returns a Store writing through writer and reading through reader
// (the same pool is fine). closer, when set, replaces closing both pools.
func New(d Dialect, writer, reader *sql.DB, closer func() error) *Store {
	if reader == nil {
		reader = writer
	}
	return &Store{d: d, w: writer, r: reader, closer: closer}
}

// stmt returns the statement prepared for query on db, or nil. It never
// prepares: preparing takes a connection from the pool, and a
// one-connection pool (the SQLite writer, an in-memory database) would
// wait forever for the connection its own transaction holds. It counts the
// miss instead; prepareMissed prepares a query missed twice once the
// transaction gave its connection back.
func (s *Store) stmt(db *sql.DB, query string) *sql.Stmt {
	if s.d.ConnKeepsStatements {
		return nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	k := stmtKey{db, query}
	if st := s.stmts[k]; st != nil {
		return st
	}
	if s.missed == nil {
		s.missed = map[stmtKey]int{}
	}
	s.missed[k]++
	return nil
}

// prepareMissed prepares the statements run unprepared at least twice.
// Statements are prepared on first reuse rather than all at open: a
// short-lived process (one exec) runs most of them once or never, and
// preparing the lot cost it about 10 ms; a long-running one (serve) has
// its hot paths prepared after their second run. A query that fails to
// prepare keeps running unprepared.
func (s *Store) prepareMissed(ctx context.Context) {
	s.stmtMu.Lock()
	var todo []stmtKey
	for k, n := range s.missed {
		if n >= 2 {
			todo = append(todo, k)
			delete(s.missed, k)
		}
	}
	s.stmtMu.Unlock()
	for _, k := range todo {
		st, err := k.db.PrepareContext(ctx, k.query)
		if err != nil {
			continue
		}
		s.stmtMu.Lock()
		if s.closed || s.stmts[k] != nil {
			st.Close()
		} else {
			if s.stmts == nil {
				s.stmts = map[stmtKey]*sql.Stmt{}
			}
			s.stmts[k] = st
		}
		s.stmtMu.Unlock()
	}
}

// Prepare prepares the statements of the hot paths (appends, heads, log
// hashes, event reads) on both pools at once, for a caller that wants no
// query parsed twice; it must run before any transaction. The backends
// leave it to first reuse instead (prepareMissed).
func (s *Store) Prepare(ctx context.Context) error {
	qs := []string{
		`SELECT max(log_index) FROM events`,
		`SELECT value FROM meta WHERE key = ?`,
		`SELECT ` + eventCols + ` FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq`,
		`SELECT ` + eventCols + ` FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT ?`,
		`SELECT valid_from_seq, key_id, public_key, enc_private, kek, created_at FROM keys WHERE session_id = ? ORDER BY valid_from_seq`,
		`SELECT ` + checkpointCols + ` FROM checkpoints ORDER BY tree_size DESC LIMIT 1`,
		`SELECT ` + checkpointCols + ` FROM checkpoints WHERE tree_size = ?`,
		`SELECT ` + sessionCols + ` FROM sessions s WHERE s.id = ?`,
		`SELECT idx, hash FROM log_hashes WHERE idx >= ? AND idx < ? ORDER BY idx`,
		updateSessionSQL,
	}
	for n := 1; n <= maxIn; n *= 2 {
		qs = append(qs, headsSQL(n, ""), headsSQL(n, s.d.ForUpdate), readHashesSQL(n))
	}
	for _, tb := range insertTables {
		for n := 1; n <= maxRows; n *= 2 {
			qs = append(qs, insertSQL(tb.name, tb.cols, tb.n, n))
		}
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if s.stmts == nil {
		s.stmts = map[stmtKey]*sql.Stmt{}
	}
	for _, db := range []*sql.DB{s.w, s.r} {
		for _, q := range qs {
			q = s.q(q)
			k := stmtKey{db, q}
			if _, ok := s.stmts[k]; ok {
				continue
			}
			st, err := db.PrepareContext(ctx, q)
			if err != nil {
				return fmt.Errorf("sqlstore: prepare %.60s…: %w", q, err)
			}
			s.stmts[k] = st
		}
	}
	return nil
}

// Kind implements ledger.Backend.
func (s *Store) Kind() string { return s.d.Name }

// Close implements ledger.Backend.
func (s *Store) Close() error {
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts, s.closed = nil, true
	s.stmtMu.Unlock()
	if s.closer != nil {
		return s.closer()
	}
	// The readers close first: SQLite checkpoints the WAL when the last
	// connection closes, and the writer has synced the WAL already, so
	// its checkpoint costs no extra directory fsync (a reader's first
	// sync of its WAL handle would).
	var err error
	if s.r != s.w {
		err = s.r.Close()
	}
	return errors.Join(err, s.w.Close())
}

// DB returns the writer pool (health checks, tests).
func (s *Store) DB() *sql.DB { return s.w }

// q rewrites "?" placeholders for the dialect.
func (s *Store) q(query string) string {
	if !s.d.Numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// SchemaVersion is the newest migration this build knows.
func (s *Store) SchemaVersion() (int, error) {
	ms, err := s.migrations()
	if err != nil || len(ms) == 0 {
		return 0, err
	}
	return ms[len(ms)-1].version, nil
}

type migration struct {
	version int
	name    string
	sql     string
}

func (s *Store) migrations() ([]migration, error) {
	ents, err := fs.ReadDir(s.d.Migrations, ".")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read migrations: %w", err)
	}
	var out []migration
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("sqlstore: migration %s: name must start with a number", name)
		}
		b, err := fs.ReadFile(s.d.Migrations, name)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: read migration %s: %w", name, err)
		}
		out = append(out, migration{v, name, string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// Migrate applies the embedded migrations that are not yet recorded in
// schema_migrations, each in its own transaction. A database migrated by
// a newer build is refused (ledger.ErrSchema).
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := s.migrations()
	if err != nil {
		return err
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	defer conn.Close()
	if s.d.MigrationLock != "" {
		if _, err := conn.ExecContext(ctx, s.d.MigrationLock); err != nil {
			return fmt.Errorf("sqlstore: migration lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), strings.Replace(s.d.MigrationLock, "pg_advisory_lock", "pg_advisory_unlock", 1))
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("sqlstore: create schema_migrations: %w", err)
	}
	var cur sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&cur); err != nil {
		return fmt.Errorf("sqlstore: read schema version: %w", err)
	}
	if len(ms) > 0 && cur.Int64 > int64(ms[len(ms)-1].version) {
		return fmt.Errorf("%w: the database is at schema %d, this build knows up to %d; upgrade ironvise", ledger.ErrSchema, cur.Int64, ms[len(ms)-1].version)
	}
	for _, m := range ms {
		if int64(m.version) <= cur.Int64 {
			continue
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("sqlstore: migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlstore: migration %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`), m.version, m.name, nowMicros()); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlstore: record migration %s: %w", m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlstore: commit migration %s: %w", m.name, err)
		}
	}
	return nil
}

// Update implements ledger.Backend.
func (s *Store) Update(ctx context.Context, fn func(ledger.WriteTx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: begin write: %w", err)
	}
	if s.d.LockWrite != "" {
		if _, err := tx.ExecContext(ctx, s.d.LockWrite); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlstore: take write lock: %w", err)
		}
	}
	defer s.prepareMissed(ctx)
	t := &txn{s: s, db: s.w, tx: tx, write: true}
	if err := fn(t); err != nil {
		tx.Rollback()
		return err
	}
	if t.added && s.d.Notify != "" {
		if _, err := tx.ExecContext(ctx, s.d.Notify); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlstore: notify: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: commit: %w", err)
	}
	s.committed()
	return nil
}

// CommitNotifications implements ledger.CommitNotifier where the dialect
// can listen.
func (s *Store) CommitNotifications(ctx context.Context) (<-chan struct{}, error) {
	if s.d.Listen == nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", s.d.Name, errors.ErrUnsupported)
	}
	return s.d.Listen(ctx, s.w)
}

// View implements ledger.Backend.
func (s *Store) View(ctx context.Context, fn func(ledger.ReadTx) error) error {
	tx, err := s.r.BeginTx(ctx, s.d.ViewOptions)
	if err != nil {
		return fmt.Errorf("sqlstore: begin read: %w", err)
	}
	defer s.prepareMissed(ctx)
	defer tx.Rollback()
	return fn(&txn{s: s, db: s.r, tx: tx})
}

// RenewLeases implements ledger.Backend. The renewal takes the write lock
// first, like every ledger write: it updates many session rows, a group
// commit locks the rows of its batch (FOR UPDATE), and two transactions
// taking the same rows in different orders deadlock (issue 13: PostgreSQL
// aborted one under load). Under the one lock, row locks are only ever
// taken by one of them at a time.
func (s *Store) RenewLeases(ctx context.Context, owner string, until, dueBefore int64) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: renew leases: begin: %w", err)
	}
	if s.d.LockWrite != "" {
		if _, err := tx.ExecContext(ctx, s.d.LockWrite); err != nil {
			tx.Rollback()
			return fmt.Errorf("sqlstore: renew leases: take write lock: %w", err)
		}
	}
	q, args := `UPDATE sessions SET lease_until = ? WHERE owner_id = ? AND status = 'running' AND sealed_at IS NULL`, []any{until, owner}
	if dueBefore != 0 {
		// A transaction that changes no row writes nothing to SQLite's
		// WAL, so it does not sync either.
		q, args = q+` AND lease_until < ?`, append(args, dueBefore)
	}
	if _, err := tx.ExecContext(ctx, s.q(q), args...); err != nil {
		tx.Rollback()
		return fmt.Errorf("sqlstore: renew leases: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: renew leases: commit: %w", err)
	}
	s.committed()
	return nil
}

var _ ledger.Backend = (*Store)(nil)

// committed counts a write transaction that committed and runs the
// dialect's AfterCommit.
func (s *Store) committed() {
	s.commits.Add(1)
	if s.d.AfterCommit != nil {
		s.d.AfterCommit()
	}
}
