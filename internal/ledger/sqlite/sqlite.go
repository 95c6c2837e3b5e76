// Package sqlite is the embedded ledger backend: one SQLite file (or a
// database held only in memory) through modernc.org/sqlite, a pure-Go
// driver, so the binary needs no cgo and cross-compiles.
//
// # Configuration
//
// The database runs in WAL mode with synchronous=FULL (a committed append
// survives a power cut), foreign keys on and a 10 s busy timeout. All
// writes go through one connection that begins with BEGIN IMMEDIATE —
// SQLite has one writer at a time anyway, and taking the lock up front
// means a write transaction never fails half-way on a lock upgrade.
// Reads use a separate pool of query-only connections that WAL lets run
// beside the writer.
//
// # Usage
//
//	b, err := sqlite.Open(ctx, filepath.Join(dataDir, "ledger.db"))
//	l, err := ledger.New(ctx, b, opts)
//
// # Limitations
//
// ":memory:" keeps the whole ledger in one connection that lives as long
// as the Store: reads wait behind writes, and everything is gone at
// Close. Several processes may share a file on a local disk (SQLite's
// locking), not over a network file system. A store opened by
// OpenBeforeExit leaves up to WALKeepBytes of its newest commits in the
// -wal file beside the database: a copy of the database file alone misses
// them (docs/operate/backup.md).
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/ironvise/ironvise/internal/ledger/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Memory is the path that selects an in-memory database.
const Memory = ":memory:"

func dialect() (sqlstore.Dialect, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return sqlstore.Dialect{}, fmt.Errorf("sqlite: embedded migrations: %w", err)
	}
	return sqlstore.Dialect{Name: "sqlite", Migrations: sub, ConnKeepsStatements: true}, nil
}

const pragmas = "_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)"

// Open opens (creating if needed, mode 0600) the SQLite ledger at path, or
// an in-memory one for Memory, and applies the migrations. The caller must
// Close it (ledger.Ledger.Close does).
func Open(ctx context.Context, path string) (*sqlstore.Store, error) {
	return open(ctx, path, pooled)
}

// OpenSingle is Open for a process that handles one command or one hook
// event and exits (standalone exec, hook): its reads go through the
// writer's one connection instead of a pool of their own. Each connection
// parses the schema and prepares its statements anew, 1–2 ms of CPU for
// the second one (docs/operate/performance.md), which such a process never
// gets back; it makes no concurrent reads for a second connection to
// serve. Its reads begin deferred (no write lock), as the pool's do.
func OpenSingle(ctx context.Context, path string) (*sqlstore.Store, error) {
	return open(ctx, path, single)
}

// WALKeepBytes is the most WAL a store opened by OpenBeforeExit leaves to the
// next process: about ten standalone execs' commits. The next process to open
// the database reads the whole WAL it finds (SQLite rebuilds its index from
// it), and a copy of the database file alone misses what the WAL holds; the
// bound keeps both small. Measured side by side, 256 KiB, 1 MiB and 4 MiB
// gave the same standalone exec time within the noise
// (docs/operate/performance.md).
const WALKeepBytes = 1 << 20

// OpenBeforeExit is OpenSingle for a process that exits as soon as the store
// is closed (a standalone exec or hook run from the command line). SQLite
// checkpoints the WAL into the database when its last connection closes:
// two more fsyncs, and the next process then syncs a fresh WAL's header
// too. While the WAL holds at most WALKeepBytes, Close leaves the
// connection open instead, for the process's exit to close: its commits
// are durable already (every commit syncs the WAL), and the next process
// to open the database reads them back from the WAL as SQLite does after
// any exit without a close. A larger WAL is checkpointed as by OpenSingle.
//
// Each Close that leaves the connection keeps its three descriptors until
// the process exits, so nothing that goes on running may use it.
func OpenBeforeExit(ctx context.Context, path string) (*sqlstore.Store, error) {
	return open(ctx, path, beforeExit)
}

// mode is how a store uses its connections, by the open function that
// chose it.
type mode int

const (
	pooled     mode = iota // Open: a writer, a pool of readers, the checkpointer
	single                 // OpenSingle: one connection for everything
	beforeExit             // OpenBeforeExit: single, and the WAL left at Close
)

func open(ctx context.Context, path string, m mode) (*sqlstore.Store, error) {
	if path == Memory {
		return openMemory(ctx)
	}
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: open %s: the path must not contain '?' or '#'", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: create directory of %s: %w", path, err)
	}
	// Create the file ourselves so it is private: it holds goals, outputs
	// and the encrypted session keys.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	f.Close()
	dsn := path + "?_txlock=immediate&_journal_mode=WAL&_synchronous=FULL&" + pragmas
	if m == pooled {
		// The checkpointer checkpoints instead (checkpointer.go).
		dsn += "&_pragma=wal_autocheckpoint(0)"
	}
	w, err := openDB(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// One writer connection: SQLite serialises writers anyway, and the
	// ledger's group commit batches many appends into each transaction.
	w.SetMaxOpenConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	d, err := dialect()
	if err != nil {
		w.Close()
		return nil, err
	}
	r := w
	if m != pooled {
		// Read-only transactions begin without _txlock's IMMEDIATE.
		d.ViewOptions = &sql.TxOptions{ReadOnly: true}
	} else {
		r, err = openDB(path + "?_txlock=deferred&_pragma=query_only(1)&" + pragmas)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("sqlite: open %s for reading: %w", path, err)
		}
		r.SetMaxOpenConns(4)
	}
	var closer func() error
	opened := false
	switch m {
	case beforeExit:
		closer = func() error {
			if opened && keepWAL(path) {
				return nil
			}
			return w.Close()
		}
	case pooled:
		ckdb, err := openDB(path + "?_synchronous=FULL&" + pragmas)
		if err != nil {
			r.Close()
			w.Close()
			return nil, fmt.Errorf("sqlite: open %s for checkpoints: %w", path, err)
		}
		ckdb.SetMaxOpenConns(1)
		ck := startCheckpointer(ckdb, path)
		d.AfterCommit = ck.committed
		closer = func() error {
			// The writer closes last: as the last connection it
			// checkpoints what is left, and its WAL handle has synced
			// already (a first sync also syncs the directory).
			return errors.Join(ck.stop(), r.Close(), w.Close())
		}
	}
	s := sqlstore.New(d, w, r, closer)
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	opened = true
	// Statements are prepared on their first reuse (sqlstore), not here:
	// a short-lived process (one exec) would spend more preparing all of
	// them than running the few it needs.
	return s, nil
}

// keepWAL reports whether the WAL beside the database at path is small
// enough to leave to the next process (OpenBeforeExit). Without a WAL, or
// when it cannot be read, the store closes as any other.
func keepWAL(path string) bool {
	fi, err := os.Stat(path + "-wal")
	return err == nil && fi.Size() > 0 && fi.Size() <= WALKeepBytes
}

func openMemory(ctx context.Context) (*sqlstore.Store, error) {
	// A private in-memory database lives exactly as long as its one
	// connection, so the pool keeps exactly one, forever.
	db, err := openDB(":memory:?_txlock=immediate&" + pragmas)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open in-memory database: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	d, err := dialect()
	if err != nil {
		db.Close()
		return nil, err
	}
	s := sqlstore.New(d, db, db, nil)
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: migrate in-memory database: %w", err)
	}
	return s, nil
}
