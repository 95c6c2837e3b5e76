-- IronVise ledger schema v1 (PostgreSQL). Evidence tables (events, keys,
-- log_hashes, checkpoints, meta) are append-only: the triggers below
-- reject UPDATE, DELETE and TRUNCATE, and the application never issues
-- any of them on these tables.

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value BYTEA NOT NULL
);

CREATE TABLE sessions (
	id           BYTEA PRIMARY KEY CHECK (length(id) = 16),
	goal         TEXT NOT NULL,
	goal_hash    TEXT NOT NULL,
	policy_hash  TEXT,
	status       TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'aborted')),
	created_at   BIGINT NOT NULL,
	finished_at  BIGINT,
	sealed_at    BIGINT,
	llm_backend  TEXT,
	llm_model    TEXT,
	sandbox_tier TEXT,
	public_key   BYTEA NOT NULL,
	did          TEXT NOT NULL,
	agent_loop   BOOLEAN NOT NULL,
	owner_id     TEXT NOT NULL,
	lease_until  BIGINT NOT NULL
);
CREATE INDEX sessions_by_created ON sessions (created_at DESC, id DESC);
CREATE INDEX sessions_by_status ON sessions (status, created_at DESC);

CREATE TABLE events (
	log_index  BIGINT PRIMARY KEY,
	session_id BYTEA NOT NULL REFERENCES sessions (id),
	seq        BIGINT NOT NULL CHECK (seq >= 0),
	type       TEXT NOT NULL,
	payload    BYTEA NOT NULL,
	created_at BIGINT NOT NULL,
	prev_hash  BYTEA NOT NULL,
	hash       BYTEA NOT NULL,
	signature  BYTEA NOT NULL,
	key_id     TEXT NOT NULL,
	signer     TEXT NOT NULL CHECK (signer IN ('session', 'issuer')),
	UNIQUE (session_id, seq)
);

CREATE TABLE keys (
	session_id     BYTEA NOT NULL REFERENCES sessions (id),
	valid_from_seq BIGINT NOT NULL,
	key_id         TEXT NOT NULL,
	public_key     BYTEA NOT NULL,
	enc_private    BYTEA,
	kek            TEXT NOT NULL,
	created_at     BIGINT NOT NULL,
	PRIMARY KEY (session_id, valid_from_seq)
);

CREATE TABLE log_hashes (
	idx  BIGINT PRIMARY KEY,
	hash BYTEA NOT NULL
);

CREATE TABLE checkpoints (
	tree_size       BIGINT PRIMARY KEY,
	root_hash       BYTEA NOT NULL,
	created_at      BIGINT NOT NULL,
	key_id          TEXT NOT NULL,
	public_key      BYTEA NOT NULL,
	signature       BYTEA NOT NULL,
	note            BYTEA NOT NULL,
	event_log_index BIGINT NOT NULL
);

CREATE TABLE api_tokens (
	token_hash TEXT PRIMARY KEY,
	role       TEXT NOT NULL,
	label      TEXT,
	created_at BIGINT NOT NULL,
	expires_at BIGINT
);

CREATE TABLE webhooks (
	id           BYTEA PRIMARY KEY,
	label        TEXT NOT NULL,
	url          TEXT NOT NULL,
	bearer       BYTEA,
	siem_format  TEXT NOT NULL,
	filter_kinds TEXT NOT NULL,
	enabled      BOOLEAN NOT NULL,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL
);

CREATE TABLE approvals (
	gate_id               BYTEA PRIMARY KEY,
	session_id            BYTEA NOT NULL REFERENCES sessions (id),
	action_name           TEXT NOT NULL,
	action_params_summary TEXT NOT NULL,
	created_at            BIGINT NOT NULL,
	decided_at            BIGINT,
	approved              BOOLEAN,
	reason                TEXT
);
CREATE INDEX approvals_pending ON approvals (session_id, decided_at, created_at);

CREATE FUNCTION ironvise_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'ironvise: % is append-only (% rejected)', TG_TABLE_NAME, TG_OP;
END
$$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION ironvise_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION ironvise_append_only();
CREATE TRIGGER keys_append_only BEFORE UPDATE OR DELETE ON keys FOR EACH ROW EXECUTE FUNCTION ironvise_append_only();
CREATE TRIGGER keys_no_truncate BEFORE TRUNCATE ON keys FOR EACH STATEMENT EXECUTE FUNCTION ironvise_append_only();
CREATE TRIGGER log_hashes_append_only BEFORE UPDATE OR DELETE ON log_hashes FOR EACH ROW EXECUTE FUNCTION ironvise_append_only();
CREATE TRIGGER log_hashes_no_truncate BEFORE TRUNCATE ON log_hashes FOR EACH STATEMENT EXECUTE FUNCTION ironvise_append_only();
CREATE TRIGGER checkpoints_append_only BEFORE UPDATE OR DELETE ON checkpoints FOR EACH ROW EXECUTE FUNCTION ironvise_append_only();
CREATE TRIGGER checkpoints_no_truncate BEFORE TRUNCATE ON checkpoints FOR EACH STATEMENT EXECUTE FUNCTION ironvise_append_only();
CREATE TRIGGER meta_append_only BEFORE UPDATE OR DELETE ON meta FOR EACH ROW EXECUTE FUNCTION ironvise_append_only();
CREATE TRIGGER meta_no_truncate BEFORE TRUNCATE ON meta FOR EACH STATEMENT EXECUTE FUNCTION ironvise_append_only();
