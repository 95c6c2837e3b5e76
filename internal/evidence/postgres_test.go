package evidence

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
)

// TestEvidenceOnPostgres builds the reference session on a real
// PostgreSQL server and exports and verifies its certificate, report and
// credential: every export works on both backends
// (docs/design/ledger.md#backends).
func TestEvidenceOnPostgres(t *testing.T) {
	base := os.Getenv("IRONVISE_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("IRONVISE_TEST_DATABASE_URL is not set: skipping the PostgreSQL evidence test (CI sets it; .ci/run shows how to start a scratch server)")
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "ivev_" + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() { admin.Exec("DROP SCHEMA " + schema + " CASCADE") })
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	ctx := context.Background()
	l, err := ledgerdb.Open(ctx, base+sep+"search_path="+schema, 5, ledger.Options{DataDir: t.TempDir(), IssuerKey: testIssuerKey(t), CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	id := buildFixture(t, l)
	data, err := BuildCertificate(ctx, l, id)
	if err != nil {
		t.Fatal(err)
	}
	if res := mustVerify(t, data, testIssuerPub(t)); !res.Valid {
		t.Fatalf("certificate from PostgreSQL: %+v", res.Pillars)
	}
	for _, f := range Formats {
		var buf bytes.Buffer
		if gate, err := Export(ctx, l, id, f, &buf); err != nil || !gate {
			t.Fatalf("export %s: gate %v err %v", f, gate, err)
		}
	}
	if v, err := VerifySessionVC(ctx, l, id); err != nil || !v.Valid {
		t.Fatalf("credential: %+v %v", v, err)
	}
}
