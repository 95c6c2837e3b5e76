-- IronVise ledger schema v1 (SQLite). Evidence tables (events, keys,
-- log_hashes, checkpoints) are append-only: the triggers below reject
-- UPDATE and DELETE, and the application never issues either on them.

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value BLOB NOT NULL
);

CREATE TABLE sessions (
	id           BLOB PRIMARY KEY CHECK (length(id) = 16),
	goal         TEXT NOT NULL,
	goal_hash    TEXT NOT NULL,
	policy_hash  TEXT,
	status       TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'aborted')),
	created_at   INTEGER NOT NULL,
	finished_at  INTEGER,
	sealed_at    INTEGER,
	llm_backend  TEXT,
	llm_model    TEXT,
	sandbox_tier TEXT,
	public_key   BLOB NOT NULL,
	did          TEXT NOT NULL,
	agent_loop   INTEGER NOT NULL,
	owner_id     TEXT NOT NULL,
	lease_until  INTEGER NOT NULL
);
CREATE INDEX sessions_by_created ON sessions (created_at DESC, id DESC);
CREATE INDEX sessions_by_status ON sessions (status, created_at DESC);

CREATE TABLE events (
	log_index  INTEGER PRIMARY KEY,
	session_id BLOB NOT NULL REFERENCES sessions (id),
	seq        INTEGER NOT NULL CHECK (seq >= 0),
	type       TEXT NOT NULL,
	payload    BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	prev_hash  BLOB NOT NULL,
	hash       BLOB NOT NULL,
	signature  BLOB NOT NULL,
	key_id     TEXT NOT NULL,
	signer     TEXT NOT NULL CHECK (signer IN ('session', 'issuer')),
	UNIQUE (session_id, seq)
);

CREATE TABLE keys (
	session_id     BLOB NOT NULL REFERENCES sessions (id),
	valid_from_seq INTEGER NOT NULL,
	key_id         TEXT NOT NULL,
	public_key     BLOB NOT NULL,
	enc_private    BLOB,
	kek            TEXT NOT NULL,
	created_at     INTEGER NOT NULL,
	PRIMARY KEY (session_id, valid_from_seq)
);

CREATE TABLE log_hashes (
	idx  INTEGER PRIMARY KEY,
	hash BLOB NOT NULL
);

CREATE TABLE checkpoints (
	tree_size       INTEGER PRIMARY KEY,
	root_hash       BLOB NOT NULL,
	created_at      INTEGER NOT NULL,
	key_id          TEXT NOT NULL,
	public_key      BLOB NOT NULL,
	signature       BLOB NOT NULL,
	note            BLOB NOT NULL,
	event_log_index INTEGER NOT NULL
);

CREATE TABLE api_tokens (
	token_hash TEXT PRIMARY KEY,
	role       TEXT NOT NULL,
	label      TEXT,
	created_at INTEGER NOT NULL,
	expires_at INTEGER
);

CREATE TABLE webhooks (
	id           BLOB PRIMARY KEY,
	label        TEXT NOT NULL,
	url          TEXT NOT NULL,
	bearer       BLOB,
	siem_format  TEXT NOT NULL,
	filter_kinds TEXT NOT NULL,
	enabled      INTEGER NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
);

CREATE TABLE approvals (
	gate_id               BLOB PRIMARY KEY,
	session_id            BLOB NOT NULL REFERENCES sessions (id),
	action_name           TEXT NOT NULL,
	action_params_summary TEXT NOT NULL,
	created_at            INTEGER NOT NULL,
	decided_at            INTEGER,
	approved              INTEGER,
	reason                TEXT
);
CREATE INDEX approvals_pending ON approvals (session_id, decided_at, created_at);

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'ironvise: events are append-only (UPDATE rejected)'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'ironvise: events are append-only (DELETE rejected)'); END;
CREATE TRIGGER keys_no_update BEFORE UPDATE ON keys
BEGIN SELECT RAISE(ABORT, 'ironvise: keys are append-only (UPDATE rejected)'); END;
CREATE TRIGGER keys_no_delete BEFORE DELETE ON keys
BEGIN SELECT RAISE(ABORT, 'ironvise: keys are append-only (DELETE rejected)'); END;
CREATE TRIGGER log_hashes_no_update BEFORE UPDATE ON log_hashes
BEGIN SELECT RAISE(ABORT, 'ironvise: log hashes are append-only (UPDATE rejected)'); END;
CREATE TRIGGER log_hashes_no_delete BEFORE DELETE ON log_hashes
BEGIN SELECT RAISE(ABORT, 'ironvise: log hashes are append-only (DELETE rejected)'); END;
CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints
BEGIN SELECT RAISE(ABORT, 'ironvise: checkpoints are append-only (UPDATE rejected)'); END;
CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON checkpoints
BEGIN SELECT RAISE(ABORT, 'ironvise: checkpoints are append-only (DELETE rejected)'); END;
CREATE TRIGGER meta_no_update BEFORE UPDATE ON meta
BEGIN SELECT RAISE(ABORT, 'ironvise: meta is append-only (UPDATE rejected)'); END;
CREATE TRIGGER meta_no_delete BEFORE DELETE ON meta
BEGIN SELECT RAISE(ABORT, 'ironvise: meta is append-only (DELETE rejected)'); END;
