-- Passphrase KEK migration (docs/ledger.md, "Session keys"): a ledger
-- written before the Argon2id KEK has session keys wrapped under the HKDF
-- passphrase KEK and an HKDF check value, both a fast guessing oracle for
-- the passphrase. Opening it with the passphrase re-wraps those keys under
-- Argon2id and deletes the HKDF check value, in one transaction. The only
-- change the triggers now let through: a key row's ciphertext moving from
-- the 'passphrase' KEK to 'passphrase-argon2id', every other column kept,
-- and the deletion of the HKDF check value.
CREATE FUNCTION ironvise_kek_migration_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_TABLE_NAME = 'keys' AND TG_OP = 'UPDATE' THEN
		IF OLD.kek = 'passphrase' AND NEW.kek = 'passphrase-argon2id' AND NEW.enc_private IS NOT NULL
			AND NEW.session_id = OLD.session_id AND NEW.valid_from_seq = OLD.valid_from_seq AND NEW.key_id = OLD.key_id
			AND NEW.public_key = OLD.public_key AND NEW.created_at = OLD.created_at THEN
			RETURN NEW;
		END IF;
	ELSIF TG_TABLE_NAME = 'meta' AND TG_OP = 'DELETE' THEN
		IF OLD.key = 'kek_check_passphrase' THEN
			RETURN OLD;
		END IF;
	END IF;
	RAISE EXCEPTION 'ironvise: % is append-only (% rejected)', TG_TABLE_NAME, TG_OP;
END
$$;
DROP TRIGGER keys_append_only ON keys;
CREATE TRIGGER keys_append_only BEFORE UPDATE OR DELETE ON keys FOR EACH ROW EXECUTE FUNCTION ironvise_kek_migration_only();
DROP TRIGGER meta_append_only ON meta;
CREATE TRIGGER meta_append_only BEFORE UPDATE OR DELETE ON meta FOR EACH ROW EXECUTE FUNCTION ironvise_kek_migration_only();
