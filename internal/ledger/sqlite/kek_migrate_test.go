package sqlite

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// testdata/legacy-passphrase.db was written by the code before the
// Argon2id KEK (commit 739c0a7's parent) with ECTO_KEY_PASSPHRASE
// "correct horse battery staple" and the issuer key of seed 01 02 … 20:
// a session with two keys (one rotation) and a webhook with a bearer
// token, all wrapped under the HKDF passphrase KEK, and the HKDF check
// value.
const legacyPassphrase = "correct horse battery staple"

var (
	legacySession = uuid.MustParse("01a234f7-3c29-7247-a99a-e0fb4072ff55")
	legacyWebhook = uuid.MustParse("01a234f7-3c2b-7b67-ba56-14154402a8b5")
)

// TestLegacyPassphraseLedgerMigrated: opening a ledger of the HKDF era
// with its passphrase re-wraps every session key and bearer token under
// Argon2id and deletes the HKDF check value in the opening transaction;
// afterwards the ledger works as before and nothing under the HKDF KEK is
// opened again, even a row put back as it was.
func TestLegacyPassphraseLedgerMigrated(t *testing.T) {
	ctx := context.Background()
	d := &testDB{path: filepath.Join(t.TempDir(), "ledger.db")}
	fixture, err := os.ReadFile("testdata/legacy-passphrase.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.path, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i + 1)
	}
	issuer, err := ledger.SigningKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	open := func(passphrase ledger.Secret) (*ledger.Ledger, error) {
		return ledger.New(ctx, d.Backend(t), ledger.Options{IssuerKey: issuer, Passphrase: passphrase, CheckpointInterval: -1, CheckpointFile: "-"})
	}
	count := func(query string) int {
		t.Helper()
		db := d.raw(t)
		defer db.Close()
		var n int
		if err := db.QueryRow(query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const (
		hkdfCheck = `SELECT count(*) FROM meta WHERE key = 'kek_check_passphrase'`
		hkdfKeys  = `SELECT count(*) FROM keys WHERE kek = 'passphrase'`
		argonKeys = `SELECT count(*) FROM keys WHERE kek = 'passphrase-argon2id'`
	)
	if count(hkdfCheck) != 1 || count(hkdfKeys) != 2 {
		t.Fatal("the fixture is not a ledger of the HKDF era")
	}
	// The old key row, to put back later.
	var oldEnc []byte
	func() {
		db := d.raw(t)
		defer db.Close()
		if err := db.QueryRow(`SELECT enc_private FROM keys WHERE kek = 'passphrase' ORDER BY valid_from_seq DESC LIMIT 1`).Scan(&oldEnc); err != nil {
			t.Fatal(err)
		}
	}()

	// A wrong passphrase is refused and migrates nothing.
	if _, err := open("wrong horse"); !errors.Is(err, ledger.ErrPassphrase) {
		t.Fatalf("wrong passphrase: %v; want ErrPassphrase", err)
	}
	if count(hkdfCheck) != 1 || count(hkdfKeys) != 2 {
		t.Fatal("a refused open changed the key rows")
	}

	l, err := open(legacyPassphrase)
	if err != nil {
		t.Fatal(err)
	}
	l.Close(ctx)
	if n := count(hkdfCheck); n != 0 {
		t.Errorf("HKDF check value still stored after the migration")
	}
	if n, m := count(hkdfKeys), count(argonKeys); n != 0 || m != 2 {
		t.Errorf("after the migration: %d keys under HKDF, %d under Argon2id; want 0 and 2", n, m)
	}
	if n := count(`SELECT count(*) FROM webhooks WHERE CAST(substr(bearer, 1, 20) AS TEXT) = 'passphrase-argon2id:'`); n != 1 {
		t.Errorf("the webhook bearer token is not under the Argon2id KEK")
	}

	// The migrated ledger works: the session continues with its newest
	// key, the bearer token opens, the chain verifies.
	l, err = open(legacyPassphrase)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, legacySession, "thought", map[string]any{"content": "after the migration"}); err != nil {
		t.Fatalf("append with a migrated key: %v", err)
	}
	if w, err := l.Webhook(ctx, legacyWebhook); err != nil || w.BearerToken != "legacy-bearer" {
		t.Fatalf("migrated webhook = %+v, %v", w, err)
	}
	r, err := l.VerifySession(ctx, legacySession)
	if err != nil || !r.OK() {
		t.Fatalf("verify the migrated session: %+v, %v", r, err)
	}
	l.Close(ctx)

	// The triggers let through the migration and nothing like it.
	for _, q := range []string{
		`UPDATE keys SET kek = 'passphrase' WHERE kek = 'passphrase-argon2id'`,
		`UPDATE keys SET public_key = x'00' WHERE kek = 'passphrase-argon2id'`,
		`DELETE FROM meta WHERE key = 'kek_check_passphrase_argon2id'`,
		`DELETE FROM keys`,
	} {
		if err := d.Exec(t, q); err == nil {
			t.Errorf("%s: accepted", q)
		}
	}

	// A row put back under the HKDF KEK is not opened any more.
	d.Tamper(t, `UPDATE keys SET kek = 'passphrase', enc_private = ? WHERE session_id = ? AND valid_from_seq = (SELECT max(valid_from_seq) FROM keys WHERE session_id = ?)`,
		oldEnc, legacySession[:], legacySession[:])
	l, err = open(legacyPassphrase)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Append(ctx, legacySession, "thought", map[string]any{"content": "x"}); !errors.Is(err, ledger.ErrKeyUnavailable) {
		t.Fatalf("append with a key row under the HKDF KEK: %v; want ErrKeyUnavailable", err)
	}
	if bytes.Equal(oldEnc, nil) {
		t.Fatal("no old key row read")
	}
}
