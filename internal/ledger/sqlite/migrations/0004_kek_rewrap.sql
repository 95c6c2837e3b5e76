-- Passphrase KEK migration (docs/ledger.md, "Session keys"): a ledger
-- written before the Argon2id KEK has session keys wrapped under the HKDF
-- passphrase KEK and an HKDF check value, both a fast guessing oracle for
-- the passphrase. Opening it with the passphrase re-wraps those keys under
-- Argon2id and deletes the HKDF check value, in one transaction. The only
-- change the triggers now let through: a key row's ciphertext moving from
-- the 'passphrase' KEK to 'passphrase-argon2id', every other column kept,
-- and the deletion of the HKDF check value.
DROP TRIGGER keys_no_update;
CREATE TRIGGER keys_no_update BEFORE UPDATE ON keys
WHEN NOT (OLD.kek = 'passphrase' AND NEW.kek = 'passphrase-argon2id' AND NEW.enc_private IS NOT NULL
	AND NEW.session_id IS OLD.session_id AND NEW.valid_from_seq IS OLD.valid_from_seq AND NEW.key_id IS OLD.key_id
	AND NEW.public_key IS OLD.public_key AND NEW.created_at IS OLD.created_at)
BEGIN SELECT RAISE(ABORT, 'ironvise: keys are append-only (UPDATE rejected)'); END;
DROP TRIGGER meta_no_delete;
CREATE TRIGGER meta_no_delete BEFORE DELETE ON meta
WHEN OLD.key <> 'kek_check_passphrase'
BEGIN SELECT RAISE(ABORT, 'ironvise: meta is append-only (DELETE rejected)'); END;
