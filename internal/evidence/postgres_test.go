package evidence

import (
	"bytes"
	"context"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// TestEvidenceOnPostgres builds the reference session on a real
// PostgreSQL server and exports and verifies its certificate, report and
// credential: every export works on both backends
// (docs/design/ledger.md#backends).
func TestEvidenceOnPostgres(t *testing.T) {
	url, _ := ledgertest.PostgresSchema(t, "ivev", "the PostgreSQL evidence test")
	ctx := context.Background()
	l, err := ledgerdb.Open(ctx, url, 5, ledger.Options{DataDir: t.TempDir(), IssuerKey: testIssuerKey(t), CheckpointInterval: -1})
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
