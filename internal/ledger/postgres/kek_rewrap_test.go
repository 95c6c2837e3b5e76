package postgres

import (
	"context"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestKEKRewrapTriggers: migration 0004 lets through exactly the changes
// the passphrase KEK migration makes — a key row's ciphertext moving from
// the HKDF passphrase KEK to the Argon2id one, every other column kept,
// and the deletion of the HKDF check value — and rejects everything else
// on keys and meta as before. (The migration itself is the ledger's code
// on the store code both backends share; the SQLite tests run it on a
// ledger written by the code of the HKDF era.)
func TestKEKRewrapTriggers(t *testing.T) {
	ctx := context.Background()
	d := newTestDB(t)
	issuer, _ := ledger.GenerateSigningKey(nil)
	l, err := ledger.New(ctx, d.Backend(t), ledger.Options{IssuerKey: issuer, Passphrase: "correct horse", CheckpointInterval: -1, CheckpointFile: "-"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "g"})
	if err != nil {
		t.Fatal(err)
	}
	l.Close(ctx)
	// A row as the HKDF era wrote it, and its check value.
	d.Tamper(t, `UPDATE keys SET kek = 'passphrase' WHERE session_id = ?`, s.ID[:])
	if err := d.Exec(t, `INSERT INTO meta (key, value) VALUES ('kek_check_passphrase', ?)`, []byte{1}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query string
		ok    bool
	}{
		{`UPDATE keys SET public_key = ? WHERE session_id = ?`, false},
		{`UPDATE keys SET kek = 'issuer', enc_private = enc_private WHERE session_id = ?`, false},
		{`UPDATE keys SET kek = 'passphrase-argon2id', key_id = 'x' WHERE session_id = ?`, false},
		{`DELETE FROM keys WHERE session_id = ?`, false},
		{`UPDATE keys SET kek = 'passphrase-argon2id', enc_private = enc_private || '\x00'::bytea WHERE session_id = ?`, true},
		{`UPDATE keys SET kek = 'passphrase', enc_private = enc_private WHERE session_id = ?`, false},
	} {
		args := []any{s.ID[:]}
		if c.query == `UPDATE keys SET public_key = ? WHERE session_id = ?` {
			args = []any{[]byte{0}, s.ID[:]}
		}
		if err := d.Exec(t, c.query, args...); (err == nil) != c.ok {
			t.Errorf("%s: err %v; want accepted %v", c.query, err, c.ok)
		}
	}
	for _, c := range []struct {
		key string
		ok  bool
	}{{"issuer_public_key", false}, {"kek_check_passphrase_argon2id", false}, {"kek_check_passphrase", true}} {
		if err := d.Exec(t, `DELETE FROM meta WHERE key = ?`, c.key); (err == nil) != c.ok {
			t.Errorf("delete meta %s: err %v; want accepted %v", c.key, err, c.ok)
		}
	}
	if err := d.Exec(t, `UPDATE meta SET value = ? WHERE key = 'issuer_public_key'`, []byte{0}); err == nil {
		t.Error("meta update accepted")
	}
}
