package config

import (
	"math"
	"path/filepath"
	"runtime"
	"strings"
)

// Ledger configures the evidence store (docs/design/ledger.md#backends,
// docs/design/ledger.md#signing-keys, docs/design/ledger.md#merkle-log;
// docs/design/cli.md).
type Ledger struct {
	// DatabaseURL is DATABASE_URL: "" (embedded SQLite file in the data
	// dir), sqlite://PATH, sqlite:PATH, sqlite::memory:, postgres://… or
	// postgresql://…. It may hold a password: never log it.
	DatabaseURL string
	// PoolSize is DATABASE_POOL_SIZE (PostgreSQL): default 2×CPU, at
	// least 5, at most 50.
	PoolSize int
	// CheckpointEvents is ECTO_CHECKPOINT_EVENTS (default 1000).
	CheckpointEvents int
	// CheckpointSecs is ECTO_CHECKPOINT_SECS (default 60).
	CheckpointSecs int
	// KeyPassphrase is ECTO_KEY_PASSPHRASE: when set, session keys are
	// stored encrypted under a key derived from it.
	KeyPassphrase Secret
	// IssuerKeyFile is ECTO_ISSUER_KEY_FILE: the issuer key's file when it
	// is kept outside the data dir (default $ECTO_DATA_DIR/keys/issuer.ed25519).
	IssuerKeyFile string
}

// DefaultPoolSize is DATABASE_POOL_SIZE's default on this machine.
func DefaultPoolSize() int { return min(50, max(5, 2*runtime.NumCPU())) }

func loadLedger(r *reader) Ledger {
	l := Ledger{DatabaseURL: r.str("DATABASE_URL", "")}
	if u := l.DatabaseURL; u != "" {
		ok := u == "sqlite::memory:" ||
			(strings.HasPrefix(u, "sqlite:") && strings.TrimPrefix(strings.TrimPrefix(u, "sqlite:"), "//") != "") ||
			strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
		if !ok {
			// The value may carry a password, so it is not echoed.
			r.fail("DATABASE_URL", "", "unknown scheme or empty path", "sqlite://PATH, sqlite:PATH, sqlite::memory:, postgres://…, postgresql://…, or unset for $ECTO_DATA_DIR/ledger.db")
		}
	}
	l.PoolSize, _ = r.intRange("DATABASE_POOL_SIZE", DefaultPoolSize(), 1, 1000)
	l.CheckpointEvents, _ = r.intRange("ECTO_CHECKPOINT_EVENTS", 1000, 1, math.MaxInt32)
	l.CheckpointSecs, _ = r.intRange("ECTO_CHECKPOINT_SECS", 60, 1, 86400)
	// The passphrase is taken verbatim: trimming would silently change
	// the key it derives.
	if v, ok := r.look("ECTO_KEY_PASSPHRASE"); ok && v != "" {
		l.KeyPassphrase = NewSecret(v)
	}
	if v := r.str("ECTO_ISSUER_KEY_FILE", ""); v != "" {
		if !filepath.IsAbs(v) {
			// Relative to what? The working directory differs between
			// serve, audit and a service manager: refuse the ambiguity.
			r.fail("ECTO_ISSUER_KEY_FILE", v, "not an absolute path", "an absolute path such as /etc/ironvise/issuer.ed25519")
		}
		l.IssuerKeyFile = v
	}
	return l
}
