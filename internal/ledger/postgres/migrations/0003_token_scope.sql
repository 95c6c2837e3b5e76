-- Session-scoped tokens (issue 13 item 7): a token's scope ('all', or
-- 'own_sessions': only the sessions it created), and the hash of the token
-- that created each session. The creator never changes.
ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'all';
ALTER TABLE sessions ADD COLUMN created_by TEXT;

CREATE FUNCTION ironvise_sessions_creator() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.created_by IS DISTINCT FROM OLD.created_by THEN
		RAISE EXCEPTION 'ironvise: a session''s creator never changes';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER sessions_creator BEFORE UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION ironvise_sessions_creator();
