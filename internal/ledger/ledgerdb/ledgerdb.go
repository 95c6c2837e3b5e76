// Package ledgerdb opens the ledger named by DATABASE_URL: it picks the
// backend (embedded SQLite, in-memory SQLite or PostgreSQL), opens and
// migrates it, and starts a [ledger.Ledger] on it. It exists apart from
// package ledger because the backends import ledger.
//
// # Usage
//
//	l, err := ledgerdb.Open(ctx, cfg.Ledger.DatabaseURL, cfg.Ledger.PoolSize, ledger.Options{DataDir: cfg.DataDir, …})
//	defer l.Close(ctx)
//
// # Limitations
//
// A relative SQLite path is relative to the working directory, as with
// any file argument.
package ledgerdb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/postgres"
	"github.com/ironvise/ironvise/internal/ledger/sqlite"
)

// Kinds of backend a URL selects.
const (
	KindSQLite   = "sqlite"
	KindMemory   = "memory"
	KindPostgres = "postgres"
)

// Target is a parsed DATABASE_URL.
type Target struct {
	// Kind is KindSQLite, KindMemory or KindPostgres.
	Kind string
	// Path is the SQLite file (KindSQLite).
	Path string
	// DSN is the PostgreSQL connection string (KindPostgres).
	DSN string
}

// Parse interprets a DATABASE_URL (docs/design/ledger.md#backends): ""
// selects $ECTO_DATA_DIR/ledger.db, "sqlite::memory:" an in-memory database,
// "sqlite://PATH" or "sqlite:PATH" a SQLite file, "postgres://…" or
// "postgresql://…" PostgreSQL.
func Parse(url, dataDir string) (Target, error) {
	switch {
	case url == "":
		if dataDir == "" {
			return Target{}, errors.New("ledgerdb: DATABASE_URL is unset and there is no data dir for the default ledger.db (set ECTO_DATA_DIR)")
		}
		return Target{Kind: KindSQLite, Path: filepath.Join(dataDir, "ledger.db")}, nil
	case url == "sqlite::memory:" || url == "sqlite://:memory:":
		return Target{Kind: KindMemory}, nil
	case strings.HasPrefix(url, "sqlite://"), strings.HasPrefix(url, "sqlite:"):
		p := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		if p == "" {
			return Target{}, fmt.Errorf("ledgerdb: DATABASE_URL %q names no file (use sqlite:///abs/path/ledger.db or sqlite:ledger.db)", url)
		}
		return Target{Kind: KindSQLite, Path: p}, nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return Target{Kind: KindPostgres, DSN: url}, nil
	}
	return Target{}, fmt.Errorf("ledgerdb: DATABASE_URL %q: unknown scheme (accepted: sqlite://PATH, sqlite:PATH, sqlite::memory:, postgres://…, postgresql://…)", postgres.Redact(url))
}

// use is what the process opening a ledger will do with it.
type use int

const (
	// useServe: many commands, many connections.
	useServe use = iota
	// useOneCommand: one command or hook event, one connection.
	useOneCommand
	// useBeforeExit: useOneCommand in a process that exits once the
	// ledger is closed.
	useBeforeExit
)

// OpenBackend opens and migrates the backend of url.
func OpenBackend(ctx context.Context, url, dataDir string, poolSize int) (ledger.Backend, Target, error) {
	return openBackend(ctx, url, dataDir, poolSize, useServe)
}

func openBackend(ctx context.Context, url, dataDir string, poolSize int, u use) (ledger.Backend, Target, error) {
	t, err := Parse(url, dataDir)
	if err != nil {
		return nil, t, err
	}
	var b ledger.Backend
	switch t.Kind {
	case KindMemory:
		b, err = sqlite.Open(ctx, sqlite.Memory)
	case KindSQLite:
		switch u {
		case useOneCommand:
			b, err = sqlite.OpenSingle(ctx, t.Path)
		case useBeforeExit:
			b, err = sqlite.OpenBeforeExit(ctx, t.Path)
		default:
			b, err = sqlite.Open(ctx, t.Path)
		}
	case KindPostgres:
		b, err = postgres.Open(ctx, t.DSN, poolSize)
	}
	if err != nil {
		return nil, t, err
	}
	return b, t, nil
}

// Open opens the backend of url and a Ledger on it. opts.DataDir is also
// where the default SQLite file lives. The caller must Close the Ledger.
func Open(ctx context.Context, url string, poolSize int, opts ledger.Options) (*ledger.Ledger, error) {
	return open(ctx, url, poolSize, opts, useServe)
}

// OpenForOneCommand is Open for a process that handles one command or one
// hook event and exits: a SQLite ledger then uses one connection for everything
// (sqlite.OpenSingle); a PostgreSQL one is opened as by Open.
func OpenForOneCommand(ctx context.Context, url string, poolSize int, opts ledger.Options) (*ledger.Ledger, error) {
	return open(ctx, url, poolSize, opts, useOneCommand)
}

// OpenBeforeExit is OpenForOneCommand for a process that exits once it has
// closed the Ledger: a SQLite ledger's Close then leaves a small WAL to the
// next process instead of checkpointing it (sqlite.OpenBeforeExit).
func OpenBeforeExit(ctx context.Context, url string, poolSize int, opts ledger.Options) (*ledger.Ledger, error) {
	return open(ctx, url, poolSize, opts, useBeforeExit)
}

func open(ctx context.Context, url string, poolSize int, opts ledger.Options, u use) (*ledger.Ledger, error) {
	b, t, err := openBackend(ctx, url, opts.DataDir, poolSize, u)
	if err != nil {
		return nil, err
	}
	if t.Kind == KindMemory && opts.CheckpointFile == "" {
		// An in-memory ledger starts empty by design: nothing to remember.
		opts.CheckpointFile = "-"
	}
	l, err := ledger.New(ctx, b, opts)
	if err != nil {
		b.Close()
		return nil, err
	}
	return l, nil
}
