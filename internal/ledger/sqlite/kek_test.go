package sqlite

import (
	"context"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestPassphraseKEKWorkFactor is issue 23 item 5: with ECTO_KEY_PASSPHRASE
// a new ledger stores its check value and session keys under the
// Argon2id KEK only, so neither offers an HKDF-speed guessing oracle
// (the instance chain is signed by the issuer key, not a session key).
func TestPassphraseKEKWorkFactor(t *testing.T) {
	ctx := context.Background()
	d := newTestDB(t).(*testDB)
	issuer, _ := ledger.GenerateSigningKey(nil)
	l, err := ledger.New(ctx, d.Backend(t), ledger.Options{IssuerKey: issuer, Passphrase: "correct horse", CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "g"}); err != nil {
		t.Fatal(err)
	}
	l.Close(ctx)
	db := d.raw(t)
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM meta WHERE key = 'kek_check_passphrase'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("HKDF check value rows: %d (%v); want none", n, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM meta WHERE key = 'kek_check_passphrase_argon2id'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("Argon2id check value rows: %d (%v); want 1", n, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM keys WHERE kek <> 'passphrase-argon2id' AND session_id <> zeroblob(16)`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d key rows not under the Argon2id KEK (%v)", n, err)
	}
}
