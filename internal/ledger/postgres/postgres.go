// Package postgres is the production ledger backend: PostgreSQL ≥ 13
// through pgx (its database/sql driver), which several `ironvise serve`
// instances can share.
//
// # Concurrency
//
// Every ledger write transaction first takes a transaction-scoped advisory
// lock, so log indexes and per-session sequences are assigned by one
// writer at a time across all instances, and locks the rows of the
// sessions it appends to (FOR UPDATE). Each instance's group commit puts
// the appends of many sessions into one such transaction, so distinct
// sessions append in parallel while the log stays gap-free and in commit
// order. Reads use REPEATABLE READ snapshots.
//
// # Usage
//
//	b, err := postgres.Open(ctx, "postgres://user:pw@host/db", 0)
//	l, err := ledger.New(ctx, b, opts)
//
// # Limitations
//
// The advisory lock keys derive from the schema the connection uses
// (search_path), so ledgers in different schemas of one database do not
// contend; two ledgers in one schema are one ledger.
package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/binary"
	"fmt"
	"io/fs"
	"net/url"
	"runtime"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ironvise/ironvise/internal/ledger/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DefaultPoolSize is DATABASE_POOL_SIZE's default: 2×CPU, at least 5, at
// most 50 (docs/design/cli.md#environment).
func DefaultPoolSize() int { return min(50, max(5, 2*runtime.NumCPU())) }

// lockKey derives an advisory lock key from a purpose and the schema.
func lockKey(purpose, schema string) int64 {
	s := sha256.Sum256([]byte("ironvise/" + purpose + "/" + schema))
	return int64(binary.BigEndian.Uint64(s[:8]))
}

// Open connects to the PostgreSQL database at dsn with a pool of poolSize
// connections (0: DefaultPoolSize) and applies the migrations. The caller
// must Close it (ledger.Ledger.Close does). Errors never echo the
// password.
func Open(ctx context.Context, dsn string, poolSize int) (*sqlstore.Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse DATABASE_URL %s: %w", Redact(dsn), err)
	}
	if poolSize <= 0 {
		poolSize = DefaultPoolSize()
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(poolSize)
	db.SetMaxIdleConns(poolSize)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect to %s: %w", Redact(dsn), err)
	}
	var schema sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: %s: read current schema: %w", Redact(dsn), err)
	}
	if !schema.Valid {
		db.Close()
		return nil, fmt.Errorf("postgres: %s: no current schema: set search_path to a schema that exists", Redact(dsn))
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: migrations: %w", err)
	}
	d := sqlstore.Dialect{
		Name:          "postgres",
		Numbered:      true,
		LockWrite:     fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", lockKey("ledger-write", schema.String)),
		ForUpdate:     " FOR UPDATE",
		ViewOptions:   &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		Migrations:    sub,
		MigrationLock: fmt.Sprintf("SELECT pg_advisory_lock(%d)", lockKey("migrate", schema.String)),
		Notify:        notifySQL(schema.String),
		Listen:        listener(schema.String),
	}
	s := sqlstore.New(d, db, db, nil)
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("postgres: migrate %s: %w", Redact(dsn), err)
	}
	if err := s.Prepare(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Redact returns dsn with any password replaced by "****", for messages
// and the API's config view.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		if err != nil {
			return "(unparsable URL)"
		}
		return dsn
	}
	if _, ok := u.User.Password(); !ok {
		return dsn
	}
	u.User = url.User(u.User.Username())
	user := u.User.String() + "@"
	return strings.Replace(u.String(), "//"+user, "//"+u.User.String()+":****@", 1)
}
