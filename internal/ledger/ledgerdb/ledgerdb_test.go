package ledgerdb

import (
	"errors"
	"time"

	"context"
	"go.uber.org/goleak"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

func TestParse(t *testing.T) {
	tests := []struct {
		url, dataDir string
		want         Target
		err          string
	}{
		{"", "/d", Target{Kind: KindSQLite, Path: "/d/ledger.db"}, ""},
		{"", "", Target{}, "ECTO_DATA_DIR"},
		{"sqlite::memory:", "/d", Target{Kind: KindMemory}, ""},
		{"sqlite:///var/lib/x.db", "/d", Target{Kind: KindSQLite, Path: "/var/lib/x.db"}, ""},
		{"sqlite://rel.db", "/d", Target{Kind: KindSQLite, Path: "rel.db"}, ""},
		{"sqlite:rel.db", "/d", Target{Kind: KindSQLite, Path: "rel.db"}, ""},
		{"sqlite:", "/d", Target{}, "names no file"},
		{"postgres://u@h/db", "/d", Target{Kind: KindPostgres, DSN: "postgres://u@h/db"}, ""},
		{"postgresql://u@h/db", "/d", Target{Kind: KindPostgres, DSN: "postgresql://u@h/db"}, ""},
		{"mysql://u:pw@h/db", "/d", Target{}, "unknown scheme"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			got, err := Parse(tc.url, tc.dataDir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse(%q) error %v; want %q", tc.url, err, tc.err)
				}
				if strings.Contains(err.Error(), ":pw@") {
					t.Fatal("error echoes the password")
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tc.url, got, err, tc.want)
			}
		})
	}
}

func TestOpenDefaultAndMemory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := Open(ctx, "", 0, ledger.Options{DataDir: dir, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "ledger.db"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("default ledger.db: %v, mode %v; want a 0600 file", err, st.Mode())
	}
	key, err := os.Stat(ledger.IssuerKeyPath(dir))
	if err != nil || key.Mode().Perm() != 0o600 {
		t.Fatalf("issuer key: %v; want a 0600 file", err)
	}
	// In memory: no file appears anywhere in the data dir.
	mem := t.TempDir()
	l, err = Open(ctx, "sqlite::memory:", 0, ledger.Options{DataDir: mem, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "in memory"}); err != nil {
		t.Fatal(err)
	}
	l.Close(ctx)
	ents, _ := os.ReadDir(mem)
	for _, e := range ents {
		if e.Name() != "keys" {
			t.Fatalf("in-memory ledger created %s in the data dir", e.Name())
		}
	}
	// Reopening memory starts empty.
	l, err = Open(ctx, "sqlite::memory:", 0, ledger.Options{DataDir: mem, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if ss, _ := l.Sessions(ctx, ledger.SessionFilter{}); len(ss) != 0 {
		t.Fatalf("%d sessions in a fresh in-memory ledger", len(ss))
	}
}

// TestCloseStopsGoroutines: the committer, the lease renewer and the
// checkpoint timer are owned by the Ledger and gone after Close.
func TestCloseStopsGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	for _, url := range []string{"sqlite::memory:", "sqlite://" + filepath.Join(t.TempDir(), "l.db")} {
		l, err := Open(ctx, url, 0, ledger.Options{DataDir: t.TempDir(), CheckpointInterval: 10 * time.Millisecond, LeaseRenewInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "leak check"})
		if err != nil {
			t.Fatal(err)
		}
		l.Append(ctx, s.ID, ledger.TypeThought, map[string]any{"content": "x"})
		time.Sleep(30 * time.Millisecond)
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(ctx); !errors.Is(err, ledger.ErrClosed) {
			t.Fatalf("second Close: %v; want ErrClosed", err)
		}
		if _, err := l.Append(ctx, s.ID, ledger.TypeThought, nil); !errors.Is(err, ledger.ErrClosed) {
			t.Fatalf("Append after Close: %v; want ErrClosed", err)
		}
	}
}
