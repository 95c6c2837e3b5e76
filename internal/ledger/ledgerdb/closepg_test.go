package ledgerdb

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// TestCloseAfterDroppedConnections: the database drops every connection
// of the instance while they sit idle in the pool, then the instance
// stops. Its final checkpoint meets a dead connection first; Close tries
// again on a fresh one instead of stopping with events no checkpoint
// covers (and an error).
func TestCloseAfterDroppedConnections(t *testing.T) {
	url, schema := ledgertest.PostgresSchema(t, "ivclose", "the dropped-connections close test")
	// Only this ledger's connections are dropped (other tests share the
	// database): they carry the schema's name as application_name.
	url += "&application_name=" + schema
	ctx := context.Background()
	l, err := Open(ctx, url, 4, ledger.Options{DataDir: t.TempDir(), CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "dropped connections"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, s.ID, "thought", map[string]any{"content": "before the drop"}); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", os.Getenv(ledgertest.PostgresURLEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	res, err := admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatal("no connection was dropped: the test exercised nothing")
	}
	if err := l.Close(ctx); err != nil {
		t.Fatalf("close after the database dropped the pool's connections: %v", err)
	}
}
