package ledgertest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver for the schema's set-up and removal
)

// PostgresURLEnv names the PostgreSQL server tests run against; .ci/run
// starts a scratch one and sets it.
const PostgresURLEnv = "IRONVISE_TEST_DATABASE_URL"

// PostgresSchema creates a fresh schema named prefix_<random> on the test
// server and returns a URL whose search_path selects it, so each test has
// an empty ledger and parallel tests never meet; the schema is dropped when
// the test ends. Without the server it skips the test, saying what for.
func PostgresSchema(t testing.TB, prefix, what string) (url, schema string) {
	t.Helper()
	base := os.Getenv(PostgresURLEnv)
	if base == "" {
		t.Skipf("%s is not set: skipping %s (CI sets it; .ci/run shows how to start a scratch server)", PostgresURLEnv, what)
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema = prefix + "_" + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create test schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if admin, err := sql.Open("pgx", base); err == nil {
			admin.Exec("DROP SCHEMA " + schema + " CASCADE")
			admin.Close()
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema, schema
}
