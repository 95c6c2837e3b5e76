package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// txn is one read or write transaction.
type txn struct {
	s     *Store
	db    *sql.DB // the pool tx came from
	tx    *sql.Tx
	write bool
	// added reports that Apply wrote events (Update then notifies).
	added bool
}

func nowMicros() int64 { return time.Now().UnixMicro() }

func (t *txn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	q = t.s.q(q)
	if st := t.s.stmt(t.db, q); st != nil {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, q, args...)
}

func (t *txn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	q = t.s.q(q)
	if st := t.s.stmt(t.db, q); st != nil {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, q, args...)
}

func (t *txn) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	q = t.s.q(q)
	if st := t.s.stmt(t.db, q); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, q, args...)
}

// forUpdate returns the row-lock suffix inside write transactions.
func (t *txn) forUpdate() string {
	if t.write {
		return t.s.d.ForUpdate
	}
	return ""
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func toHash(b []byte) (ledger.Hash, error) {
	var h ledger.Hash
	if len(b) != len(h) {
		return h, fmt.Errorf("sqlstore: stored hash has %d bytes, want 32", len(b))
	}
	copy(h[:], b)
	return h, nil
}

func toUUID(b []byte) (uuid.UUID, error) {
	id, err := uuid.FromBytes(b)
	if err != nil {
		return id, fmt.Errorf("sqlstore: stored id: %w", err)
	}
	return id, nil
}

// Meta implements ledger.ReadTx.
func (t *txn) Meta(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := t.queryRow(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlstore: meta %s: %w", key, err)
	}
	return v, true, nil
}

// InsertMeta implements ledger.WriteTx.
func (t *txn) InsertMeta(ctx context.Context, key string, value []byte) error {
	if _, err := t.exec(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)`, key, value); err != nil {
		return fmt.Errorf("sqlstore: insert meta %s: %w", key, err)
	}
	return nil
}

// DeleteMeta implements ledger.WriteTx.
func (t *txn) DeleteMeta(ctx context.Context, key string) error {
	res, err := t.exec(ctx, `DELETE FROM meta WHERE key = ?`, key)
	return affectedOne(res, err, "delete meta "+key)
}

// KeysUnderKEK implements ledger.WriteTx.
func (t *txn) KeysUnderKEK(ctx context.Context, kek string) ([]ledger.KeyRecord, error) {
	return t.keys(ctx, "keys under the "+kek+" KEK", `kek = ? ORDER BY session_id, valid_from_seq`, kek)
}

// keys returns the key rows matching where (what names them in errors).
func (t *txn) keys(ctx context.Context, what, where string, args ...any) ([]ledger.KeyRecord, error) {
	rows, err := t.query(ctx, `SELECT session_id, valid_from_seq, key_id, public_key, enc_private, kek, created_at FROM keys WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	defer rows.Close()
	var out []ledger.KeyRecord
	for rows.Next() {
		var k ledger.KeyRecord
		var sid, pub []byte
		var from int64
		if err := rows.Scan(&sid, &from, &k.KeyID, &pub, &k.EncryptedPrivate, &k.KEK, &k.CreatedMicros); err != nil {
			return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
		}
		if k.SessionID, err = toUUID(sid); err != nil {
			return nil, fmt.Errorf("sqlstore: %s: %w", what, err)
		}
		k.ValidFromSeq, k.PublicKey = uint64(from), pub
		out = append(out, k)
	}
	return out, rows.Err()
}

// RewrapKey implements ledger.WriteTx.
func (t *txn) RewrapKey(ctx context.Context, k ledger.KeyRecord) error {
	res, err := t.exec(ctx, `UPDATE keys SET enc_private = ?, kek = ? WHERE session_id = ? AND valid_from_seq = ?`,
		k.EncryptedPrivate, k.KEK, k.SessionID[:], int64(k.ValidFromSeq))
	return affectedOne(res, err, "re-wrap key")
}

// LogSize implements ledger.ReadTx.
func (t *txn) LogSize(ctx context.Context) (int64, error) {
	var n sql.NullInt64
	if err := t.queryRow(ctx, `SELECT max(log_index) FROM events`).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlstore: log size: %w", err)
	}
	if !n.Valid {
		return 0, nil
	}
	return n.Int64 + 1, nil
}

// ReadHashes implements ledger.ReadTx.
func (t *txn) ReadHashes(ctx context.Context, indexes []int64) ([]ledger.Hash, error) {
	got := make(map[int64]ledger.Hash, len(indexes))
	for start := 0; start < len(indexes); start += maxIn {
		chunk := indexes[start:min(start+maxIn, len(indexes))]
		args := make([]any, len(chunk))
		for i, ix := range chunk {
			args[i] = ix
		}
		args = padPow2(args)
		rows, err := t.query(ctx, readHashesSQL(len(args)), args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: read log hashes: %w", err)
		}
		var b sql.RawBytes
		for rows.Next() {
			var ix int64
			if err := rows.Scan(&ix, &b); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlstore: read log hashes: %w", err)
			}
			h, err := toHash(b)
			if err != nil {
				rows.Close()
				return nil, err
			}
			got[ix] = h
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("sqlstore: read log hashes: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlstore: read log hashes: %w", err)
		}
	}
	out := make([]ledger.Hash, len(indexes))
	for i, ix := range indexes {
		h, ok := got[ix]
		if !ok {
			return nil, fmt.Errorf("sqlstore: log hash %d is missing", ix)
		}
		out[i] = h
	}
	return out, nil
}

// HashRange implements ledger.ReadTx.
func (t *txn) HashRange(ctx context.Context, lo, hi int64) ([]ledger.StoredHash, error) {
	rows, err := t.query(ctx, `SELECT idx, hash FROM log_hashes WHERE idx >= ? AND idx < ? ORDER BY idx`, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: read log hash range: %w", err)
	}
	defer rows.Close()
	out := make([]ledger.StoredHash, 0, max(0, min(hi-lo, 1<<16)))
	var b sql.RawBytes
	for rows.Next() {
		var sh ledger.StoredHash
		if err := rows.Scan(&sh.Index, &b); err != nil {
			return nil, fmt.Errorf("sqlstore: read log hash range: %w", err)
		}
		if sh.Hash, err = toHash(b); err != nil {
			return nil, err
		}
		out = append(out, sh)
	}
	return out, rows.Err()
}

const sessionCols = `s.id, s.goal, s.goal_hash, s.policy_hash, s.status, s.created_at, s.finished_at, s.sealed_at,
	s.llm_backend, s.llm_model, s.sandbox_tier, s.public_key, s.did, s.agent_loop, s.owner_id, s.lease_until,
	(SELECT coalesce(max(e.seq) + 1, 0) FROM events e WHERE e.session_id = s.id), s.created_by`

func scanSession(sc interface{ Scan(...any) error }) (ledger.Session, error) {
	var s ledger.Session
	var id, pub []byte
	var policy, llmB, llmM, tier, creator sql.NullString
	var created, lease int64
	var finished, sealed sql.NullInt64
	var status string
	if err := sc.Scan(&id, &s.Goal, &s.GoalHash, &policy, &status, &created, &finished, &sealed,
		&llmB, &llmM, &tier, &pub, &s.DID, &s.AgentLoop, &s.OwnerID, &lease, &s.EventCount, &creator); err != nil {
		return s, err
	}
	var err error
	if s.ID, err = toUUID(id); err != nil {
		return s, err
	}
	s.PolicyHash, s.LLMBackend, s.LLMModel, s.SandboxTier = policy.String, llmB.String, llmM.String, tier.String
	s.CreatedBy = creator.String
	s.Status = ledger.Status(status)
	s.CreatedAt = time.UnixMicro(created).UTC()
	if finished.Valid {
		s.FinishedAt = time.UnixMicro(finished.Int64).UTC()
	}
	if sealed.Valid {
		s.SealedAt = time.UnixMicro(sealed.Int64).UTC()
	}
	s.LeaseUntil = time.UnixMicro(lease).UTC()
	s.PublicKey = pub
	return s, nil
}

// Session implements ledger.ReadTx.
func (t *txn) Session(ctx context.Context, id uuid.UUID) (ledger.Session, error) {
	s, err := scanSession(t.queryRow(ctx, `SELECT `+sessionCols+` FROM sessions s WHERE s.id = ?`, id[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return s, ledger.ErrNotFound
	}
	if err != nil {
		return s, fmt.Errorf("sqlstore: session %s: %w", id, err)
	}
	return s, nil
}

// Sessions implements ledger.ReadTx.
func (t *txn) Sessions(ctx context.Context, f ledger.SessionFilter) ([]ledger.Session, error) {
	cols := sessionCols
	if f.WithDenials {
		cols += `, ` + denialsCol(t.s.d.Name)
	}
	q := `SELECT ` + cols + ` FROM sessions s WHERE s.id <> ?`
	args := []any{ledger.InstanceSessionID[:]}
	if f.Status != "" {
		q += ` AND s.status = ?`
		args = append(args, string(f.Status))
	}
	if f.CreatedBy != "" {
		q += ` AND s.created_by = ?`
		args = append(args, f.CreatedBy)
	}
	q += ` ORDER BY s.created_at DESC, s.id DESC LIMIT ? OFFSET ?`
	args = append(args, f.Limit, f.Offset)
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list sessions: %w", err)
	}
	defer rows.Close()
	var out []ledger.Session
	for rows.Next() {
		var denials int64
		var sc interface{ Scan(...any) error } = rows
		if f.WithDenials {
			sc = extraScan{rows, []any{&denials}}
		}
		s, err := scanSession(sc)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: list sessions: %w", err)
		}
		s.Denials = denials
		out = append(out, s)
	}
	return out, rows.Err()
}

// denialsCol counts a listed session's deny verdicts. Payloads are
// canonical JSON (RFC 8785), in which a member reads exactly
// "decision":"deny" and a string value cannot contain those bytes
// unescaped, so a byte search is exact.
func denialsCol(dialect string) string {
	match := `instr(e.payload, CAST('"decision":"deny"' AS BLOB)) > 0`
	if dialect == "postgres" {
		match = `position(convert_to('"decision":"deny"', 'UTF8') in e.payload) > 0`
	}
	return `(SELECT count(*) FROM events e WHERE e.session_id = s.id AND e.type = 'check_verdict' AND ` + match + `)`
}

// extraScan scans the columns a query adds after a shared column list.
type extraScan struct {
	r     *sql.Rows
	extra []any
}

// Scan implements the scanner scanSession takes.
func (e extraScan) Scan(dest ...any) error { return e.r.Scan(append(dest, e.extra...)...) }

const headCols = `s.id, s.status, s.sealed_at, s.goal_hash, s.owner_id, s.lease_until,
	(SELECT e.seq FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1),
	(SELECT e.hash FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1)`

// maxIn is the largest IN list of a prepared statement; longer lists are
// chunked, shorter ones padded to a power of two by repeating an id (IN
// ignores duplicates), so a handful of statements cover every size.
const maxIn = 64

func headsSQL(n int, forUpdate string) string {
	return `SELECT ` + headCols + ` FROM sessions s WHERE s.id IN (` + placeholders(n) + `)` + forUpdate
}

func readHashesSQL(n int) string {
	return `SELECT idx, hash FROM log_hashes WHERE idx IN (` + placeholders(n) + `)`
}

// padPow2 pads args to the next power of two by repeating the last one.
func padPow2(args []any) []any {
	n := 1
	for n < len(args) {
		n *= 2
	}
	for len(args) < n {
		args = append(args, args[len(args)-1])
	}
	return args
}

func (t *txn) heads(ctx context.Context, where string, args ...any) ([]ledger.SessionHead, error) {
	rows, err := t.query(ctx, `SELECT `+headCols+` FROM sessions s WHERE `+where+t.forUpdate(), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: session heads: %w", err)
	}
	defer rows.Close()
	var out []ledger.SessionHead
	for rows.Next() {
		var h ledger.SessionHead
		var id, last []byte
		var status string
		var sealed, seq sql.NullInt64
		if err := rows.Scan(&id, &status, &sealed, &h.GoalHash, &h.OwnerID, &h.LeaseUntil, &seq, &last); err != nil {
			return nil, fmt.Errorf("sqlstore: session heads: %w", err)
		}
		if h.ID, err = toUUID(id); err != nil {
			return nil, err
		}
		h.Status, h.Sealed = ledger.Status(status), sealed.Valid
		if seq.Valid {
			h.HasEvents, h.LastSeq = true, uint64(seq.Int64)
			if h.LastHash, err = toHash(last); err != nil {
				return nil, err
			}
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// SessionHeads implements ledger.ReadTx.
func (t *txn) SessionHeads(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]ledger.SessionHead, error) {
	out := map[uuid.UUID]ledger.SessionHead{}
	for start := 0; start < len(ids); start += maxIn {
		chunk := ids[start:min(start+maxIn, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id[:]
		}
		args = padPow2(args)
		hs, err := t.heads(ctx, `s.id IN (`+placeholders(len(args))+`)`, args...)
		if err != nil {
			return nil, err
		}
		for _, h := range hs {
			out[h.ID] = h
		}
	}
	return out, nil
}

// RunningSessions implements ledger.ReadTx.
func (t *txn) RunningSessions(ctx context.Context) ([]ledger.SessionHead, error) {
	return t.heads(ctx, `s.status = 'running' AND s.id <> ?`, ledger.InstanceSessionID[:])
}

// SessionCounts implements ledger.ReadTx.
func (t *txn) SessionCounts(ctx context.Context) (map[ledger.Status]int64, error) {
	rows, err := t.query(ctx, `SELECT status, count(*) FROM sessions WHERE id <> ? GROUP BY status`, ledger.InstanceSessionID[:])
	if err != nil {
		return nil, fmt.Errorf("sqlstore: count sessions: %w", err)
	}
	defer rows.Close()
	out := map[ledger.Status]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("sqlstore: count sessions: %w", err)
		}
		out[ledger.Status(st)] = n
	}
	return out, rows.Err()
}

const eventCols = `log_index, session_id, seq, type, payload, created_at, prev_hash, hash, signature, key_id, signer`

func scanEvents(rows *sql.Rows) ([]ledger.Event, error) {
	defer rows.Close()
	var out []ledger.Event
	// RawBytes avoids database/sql's second copy of every blob; hashes go
	// into fixed arrays and payloads and signatures into slabs that start
	// at 4 KiB and double up to 64 KiB: a short read (the startup check's
	// tail, a few events) no longer takes 64 KiB of fresh memory in a
	// process that lives for one command, and a long one (verify-session)
	// still allocates a slab per 64 KiB.
	var sid, prev, hash, payload, sig sql.RawBytes
	var slab []byte
	keep := func(b []byte) []byte {
		if cap(slab)-len(slab) < len(b) {
			slab = make([]byte, 0, max(min(2*cap(slab), 64<<10), 4<<10, 2*len(b)))
		}
		start := len(slab)
		slab = append(slab, b...)
		return slab[start:len(slab):len(slab)]
	}
	for rows.Next() {
		var ev ledger.Event
		var seq int64
		if err := rows.Scan(&ev.LogIndex, &sid, &seq, &ev.Type, &payload, &ev.CreatedMicros, &prev, &hash, &sig, &ev.KeyID, &ev.Signer); err != nil {
			return nil, fmt.Errorf("sqlstore: read events: %w", err)
		}
		ev.Seq = uint64(seq)
		var err error
		if ev.SessionID, err = toUUID(sid); err != nil {
			return nil, err
		}
		if ev.PrevHash, err = toHash(prev); err != nil {
			return nil, err
		}
		if ev.Hash, err = toHash(hash); err != nil {
			return nil, err
		}
		ev.Payload, ev.Signature = keep(payload), keep(sig)
		out = append(out, ev)
	}
	return out, rows.Err()
}

// Events implements ledger.ReadTx.
func (t *txn) Events(ctx context.Context, session uuid.UUID, fromSeq uint64, limit int) ([]ledger.Event, error) {
	q := `SELECT ` + eventCols + ` FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq`
	args := []any{session[:], int64(fromSeq)}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: events of %s: %w", session, err)
	}
	return scanEvents(rows)
}

// EventsByLog implements ledger.ReadTx.
func (t *txn) EventsByLog(ctx context.Context, from int64, limit int) ([]ledger.Event, error) {
	q := `SELECT ` + eventCols + ` FROM events WHERE log_index >= ? ORDER BY log_index`
	args := []any{from}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: events from %d: %w", from, err)
	}
	return scanEvents(rows)
}

// CountEventsInLog implements ledger.ReadTx.
func (t *txn) CountEventsInLog(ctx context.Context, lo, hi int64) (int64, error) {
	var n int64
	if err := t.queryRow(ctx, `SELECT count(*) FROM events WHERE log_index >= ? AND log_index < ?`, lo, hi).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlstore: count events: %w", err)
	}
	return n, nil
}

// FirstMissingLogIndex implements ledger.ReadTx.
func (t *txn) FirstMissingLogIndex(ctx context.Context, lo, hi int64) (int64, error) {
	if lo >= hi {
		return -1, nil
	}
	var one int
	err := t.queryRow(ctx, `SELECT 1 FROM events WHERE log_index = ?`, lo).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return lo, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: find missing leaf: %w", err)
	}
	var next sql.NullInt64
	err = t.queryRow(ctx, `SELECT min(e.log_index) + 1 FROM events e WHERE e.log_index >= ? AND e.log_index < ?
		AND NOT EXISTS (SELECT 1 FROM events f WHERE f.log_index = e.log_index + 1)`, lo, hi).Scan(&next)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: find missing leaf: %w", err)
	}
	if next.Valid && next.Int64 < hi {
		return next.Int64, nil
	}
	return -1, nil
}

// Keys implements ledger.ReadTx.
func (t *txn) Keys(ctx context.Context, session uuid.UUID) ([]ledger.KeyRecord, error) {
	return t.keys(ctx, "keys of "+session.String(), `session_id = ? ORDER BY valid_from_seq`, session[:])
}

const checkpointCols = `tree_size, root_hash, created_at, key_id, public_key, signature, note, event_log_index`

func scanCheckpoint(sc interface{ Scan(...any) error }) (ledger.Checkpoint, error) {
	var cp ledger.Checkpoint
	var root, pub []byte
	if err := sc.Scan(&cp.TreeSize, &root, &cp.CreatedMicros, &cp.KeyID, &pub, &cp.Signature, &cp.Note, &cp.EventLogIndex); err != nil {
		return cp, err
	}
	var err error
	cp.Root, err = toHash(root)
	cp.PublicKey = pub
	return cp, err
}

func (t *txn) oneCheckpoint(ctx context.Context, q string, args ...any) (ledger.Checkpoint, error) {
	cp, err := scanCheckpoint(t.queryRow(ctx, q, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return cp, ledger.ErrNotFound
	}
	if err != nil {
		return cp, fmt.Errorf("sqlstore: checkpoint: %w", err)
	}
	return cp, nil
}

// LatestCheckpoint implements ledger.ReadTx.
func (t *txn) LatestCheckpoint(ctx context.Context) (ledger.Checkpoint, error) {
	return t.oneCheckpoint(ctx, `SELECT `+checkpointCols+` FROM checkpoints ORDER BY tree_size DESC LIMIT 1`)
}

// CheckpointBySize implements ledger.ReadTx.
func (t *txn) CheckpointBySize(ctx context.Context, size int64) (ledger.Checkpoint, error) {
	return t.oneCheckpoint(ctx, `SELECT `+checkpointCols+` FROM checkpoints WHERE tree_size = ?`, size)
}

// Checkpoints implements ledger.ReadTx.
func (t *txn) Checkpoints(ctx context.Context) ([]ledger.Checkpoint, error) {
	rows, err := t.query(ctx, `SELECT `+checkpointCols+` FROM checkpoints ORDER BY tree_size`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: checkpoints: %w", err)
	}
	defer rows.Close()
	var out []ledger.Checkpoint
	for rows.Next() {
		cp, err := scanCheckpoint(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: checkpoints: %w", err)
		}
		out = append(out, cp)
	}
	return out, rows.Err()
}

// maxRows is the largest multi-row INSERT; a batch is written in chunks
// of maxRows, then power-of-two chunks, so every statement is one of a
// few prepared ones.
const maxRows = 64

// insertTable describes a table the ledger appends rows to.
type insertTable struct {
	name, cols string
	n          int
}

var (
	tableSessions = insertTable{"sessions", `id, goal, goal_hash, policy_hash, status, created_at, finished_at, sealed_at, llm_backend, llm_model, sandbox_tier, public_key, did, agent_loop, owner_id, lease_until, created_by`, 17}
	tableKeys     = insertTable{"keys", `session_id, valid_from_seq, key_id, public_key, enc_private, kek, created_at`, 7}
	tableEvents   = insertTable{"events", eventCols, 11}
	tableHashes   = insertTable{"log_hashes", `idx, hash`, 2}
	tableCPs      = insertTable{"checkpoints", checkpointCols, 8}
	insertTables  = []insertTable{tableSessions, tableKeys, tableEvents, tableHashes, tableCPs}
)

func insertSQL(table, cols string, ncols, nrows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " (" + cols + ") VALUES ")
	one := "(" + placeholders(ncols) + ")"
	for i := range nrows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(one)
	}
	return b.String()
}

// insertRows writes nrows rows with as few prepared statements as
// possible.
func (t *txn) insertRows(ctx context.Context, tb insertTable, nrows int, row func(i int) []any) error {
	for start := 0; start < nrows; {
		k := maxRows
		for k > nrows-start {
			k /= 2
		}
		args := make([]any, 0, k*tb.n)
		for i := start; i < start+k; i++ {
			args = append(args, row(i)...)
		}
		if _, err := t.exec(ctx, insertSQL(tb.name, tb.cols, tb.n, k), args...); err != nil {
			return fmt.Errorf("sqlstore: insert %s: %w", tb.name, err)
		}
		start += k
	}
	return nil
}

// Apply implements ledger.WriteTx.
func (t *txn) Apply(ctx context.Context, c *ledger.Changes) error {
	t.added = t.added || len(c.Events) > 0
	if err := t.insertRows(ctx, tableSessions, len(c.NewSessions), func(i int) []any {
		s := &c.NewSessions[i]
		return []any{s.ID[:], s.Goal, s.GoalHash, nullStr(s.PolicyHash), string(s.Status), s.CreatedAt.UnixMicro(),
			nullTime(s.FinishedAt), nullTime(s.SealedAt), nullStr(s.LLMBackend), nullStr(s.LLMModel), nullStr(s.SandboxTier),
			[]byte(s.PublicKey), s.DID, s.AgentLoop, s.OwnerID, s.LeaseUntil.UnixMicro(), nullStr(s.CreatedBy)}
	}); err != nil {
		return err
	}
	for _, u := range c.SessionUpdates {
		var status any
		if u.Status != nil {
			status = string(*u.Status)
		}
		var fin, sealed any
		if u.FinishedMicro != nil {
			fin = *u.FinishedMicro
		}
		if u.SealedMicro != nil {
			sealed = *u.SealedMicro
		}
		if _, err := t.exec(ctx, updateSessionSQL, status, fin, sealed, u.ID[:]); err != nil {
			return fmt.Errorf("sqlstore: update session %s: %w", u.ID, err)
		}
	}
	if err := t.insertRows(ctx, tableKeys, len(c.Keys), func(i int) []any {
		k := &c.Keys[i]
		var enc any
		if k.EncryptedPrivate != nil {
			enc = k.EncryptedPrivate
		}
		return []any{k.SessionID[:], int64(k.ValidFromSeq), k.KeyID, []byte(k.PublicKey), enc, k.KEK, k.CreatedMicros}
	}); err != nil {
		return err
	}
	if err := t.insertRows(ctx, tableEvents, len(c.Events), func(i int) []any {
		e := &c.Events[i]
		return []any{e.LogIndex, e.SessionID[:], int64(e.Seq), e.Type, e.Payload, e.CreatedMicros, e.PrevHash[:], e.Hash[:], e.Signature, e.KeyID, e.Signer}
	}); err != nil {
		return err
	}
	if err := t.insertRows(ctx, tableHashes, len(c.Hashes), func(i int) []any {
		return []any{c.Hashes[i].Index, c.Hashes[i].Hash[:]}
	}); err != nil {
		return err
	}
	return t.insertRows(ctx, tableCPs, len(c.Checkpoints), func(i int) []any {
		cp := &c.Checkpoints[i]
		return []any{cp.TreeSize, cp.Root[:], cp.CreatedMicros, cp.KeyID, []byte(cp.PublicKey), cp.Signature, cp.Note, cp.EventLogIndex}
	})
}

const updateSessionSQL = `UPDATE sessions SET status = coalesce(?, status), finished_at = coalesce(finished_at, ?), sealed_at = coalesce(sealed_at, ?) WHERE id = ?`

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// PutToken implements ledger.WriteTx.
func (t *txn) PutToken(ctx context.Context, tok ledger.Token) error {
	scope := tok.Scope
	if scope == "" {
		scope = ledger.ScopeAll
	}
	_, err := t.exec(ctx, `INSERT INTO api_tokens (token_hash, role, label, created_at, expires_at, scope) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (token_hash) DO UPDATE SET role = excluded.role, label = excluded.label, expires_at = excluded.expires_at, scope = excluded.scope`,
		tok.Hash, tok.Role, nullStr(tok.Label), tok.CreatedAt.UnixMicro(), nullTime(tok.ExpiresAt), scope)
	if err != nil {
		return fmt.Errorf("sqlstore: put token: %w", err)
	}
	return nil
}

func scanToken(sc interface{ Scan(...any) error }) (ledger.Token, error) {
	var tok ledger.Token
	var label sql.NullString
	var created int64
	var exp sql.NullInt64
	if err := sc.Scan(&tok.Hash, &tok.Role, &label, &created, &exp, &tok.Scope); err != nil {
		return tok, err
	}
	tok.Label, tok.CreatedAt = label.String, time.UnixMicro(created).UTC()
	if exp.Valid {
		tok.ExpiresAt = time.UnixMicro(exp.Int64).UTC()
	}
	return tok, nil
}

// Token implements ledger.ReadTx.
func (t *txn) Token(ctx context.Context, hash string) (ledger.Token, error) {
	tok, err := scanToken(t.queryRow(ctx, `SELECT token_hash, role, label, created_at, expires_at, scope FROM api_tokens WHERE token_hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return tok, ledger.ErrNotFound
	}
	if err != nil {
		return tok, fmt.Errorf("sqlstore: token: %w", err)
	}
	return tok, nil
}

// Tokens implements ledger.ReadTx.
func (t *txn) Tokens(ctx context.Context) ([]ledger.Token, error) {
	rows, err := t.query(ctx, `SELECT token_hash, role, label, created_at, expires_at, scope FROM api_tokens ORDER BY created_at DESC, token_hash`)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: tokens: %w", err)
	}
	defer rows.Close()
	var out []ledger.Token
	for rows.Next() {
		tok, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: tokens: %w", err)
		}
		out = append(out, tok)
	}
	return out, rows.Err()
}

func affectedOne(res sql.Result, err error, what string) error {
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	if n == 0 {
		return ledger.ErrNotFound
	}
	return nil
}

// DeleteToken implements ledger.WriteTx.
func (t *txn) DeleteToken(ctx context.Context, hash string) error {
	res, err := t.exec(ctx, `DELETE FROM api_tokens WHERE token_hash = ?`, hash)
	return affectedOne(res, err, "delete token")
}

// DeleteTokensByLabel implements ledger.WriteTx.
func (t *txn) DeleteTokensByLabel(ctx context.Context, label string) (int64, error) {
	res, err := t.exec(ctx, `DELETE FROM api_tokens WHERE label = ?`, label)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: delete tokens: %w", err)
	}
	return res.RowsAffected()
}

const webhookCols = `id, label, url, bearer, siem_format, filter_kinds, enabled, created_at, updated_at`

func scanWebhook(sc interface{ Scan(...any) error }) (ledger.Webhook, []byte, error) {
	var w ledger.Webhook
	var id, enc []byte
	var kinds string
	var created, updated int64
	if err := sc.Scan(&id, &w.Label, &w.URL, &enc, &w.SIEMFormat, &kinds, &w.Enabled, &created, &updated); err != nil {
		return w, nil, err
	}
	var err error
	if w.ID, err = toUUID(id); err != nil {
		return w, nil, err
	}
	if err := json.Unmarshal([]byte(kinds), &w.FilterKinds); err != nil {
		return w, nil, fmt.Errorf("sqlstore: webhook %s filter_kinds: %w", w.ID, err)
	}
	w.CreatedAt, w.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return w, enc, nil
}

// InsertWebhook implements ledger.WriteTx.
func (t *txn) InsertWebhook(ctx context.Context, w ledger.Webhook, enc []byte) error {
	kinds, err := json.Marshal(append([]string{}, w.FilterKinds...))
	if err != nil {
		return fmt.Errorf("sqlstore: webhook kinds: %w", err)
	}
	var bearer any
	if len(enc) > 0 {
		bearer = enc
	}
	if _, err := t.exec(ctx, `INSERT INTO webhooks (`+webhookCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		w.ID[:], w.Label, w.URL, bearer, w.SIEMFormat, string(kinds), w.Enabled, w.CreatedAt.UnixMicro(), w.UpdatedAt.UnixMicro()); err != nil {
		return fmt.Errorf("sqlstore: insert webhook: %w", err)
	}
	return nil
}

// Webhook implements ledger.ReadTx.
func (t *txn) Webhook(ctx context.Context, id uuid.UUID) (ledger.Webhook, []byte, error) {
	w, enc, err := scanWebhook(t.queryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = ?`, id[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return w, nil, ledger.ErrNotFound
	}
	if err != nil {
		return w, nil, fmt.Errorf("sqlstore: webhook: %w", err)
	}
	return w, enc, nil
}

// Webhooks implements ledger.ReadTx.
func (t *txn) Webhooks(ctx context.Context) ([]ledger.Webhook, [][]byte, error) {
	rows, err := t.query(ctx, `SELECT `+webhookCols+` FROM webhooks ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlstore: webhooks: %w", err)
	}
	defer rows.Close()
	var ws []ledger.Webhook
	var encs [][]byte
	for rows.Next() {
		w, enc, err := scanWebhook(rows)
		if err != nil {
			return nil, nil, fmt.Errorf("sqlstore: webhooks: %w", err)
		}
		ws, encs = append(ws, w), append(encs, enc)
	}
	return ws, encs, rows.Err()
}

// SetWebhookEnabled implements ledger.WriteTx.
func (t *txn) SetWebhookEnabled(ctx context.Context, id uuid.UUID, enabled bool, at int64) error {
	res, err := t.exec(ctx, `UPDATE webhooks SET enabled = ?, updated_at = ? WHERE id = ?`, enabled, at, id[:])
	return affectedOne(res, err, "update webhook")
}

// SetWebhookBearer implements ledger.WriteTx.
func (t *txn) SetWebhookBearer(ctx context.Context, id uuid.UUID, enc []byte) error {
	res, err := t.exec(ctx, `UPDATE webhooks SET bearer = ? WHERE id = ?`, enc, id[:])
	return affectedOne(res, err, "re-wrap webhook bearer")
}

// DeleteWebhook implements ledger.WriteTx.
func (t *txn) DeleteWebhook(ctx context.Context, id uuid.UUID) error {
	res, err := t.exec(ctx, `DELETE FROM webhooks WHERE id = ?`, id[:])
	return affectedOne(res, err, "delete webhook")
}

const approvalCols = `gate_id, session_id, action_name, action_params_summary, created_at, decided_at, approved, reason`

func scanApproval(sc interface{ Scan(...any) error }) (ledger.Approval, error) {
	var a ledger.Approval
	var gate, sid []byte
	var created int64
	var decided sql.NullInt64
	var approved sql.NullBool
	var reason sql.NullString
	if err := sc.Scan(&gate, &sid, &a.ActionName, &a.ActionParamsSummary, &created, &decided, &approved, &reason); err != nil {
		return a, err
	}
	var err error
	if a.GateID, err = toUUID(gate); err != nil {
		return a, err
	}
	if a.SessionID, err = toUUID(sid); err != nil {
		return a, err
	}
	a.CreatedAt = time.UnixMicro(created).UTC()
	if decided.Valid {
		a.DecidedAt = time.UnixMicro(decided.Int64).UTC()
	}
	a.Approved, a.Reason = approved.Bool, reason.String
	return a, nil
}

// InsertApproval implements ledger.WriteTx.
func (t *txn) InsertApproval(ctx context.Context, a ledger.Approval) error {
	if _, err := t.exec(ctx, `INSERT INTO approvals (`+approvalCols+`) VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL)`,
		a.GateID[:], a.SessionID[:], a.ActionName, a.ActionParamsSummary, a.CreatedAt.UnixMicro()); err != nil {
		return fmt.Errorf("sqlstore: insert approval: %w", err)
	}
	return nil
}

// PendingApproval implements ledger.ReadTx.
func (t *txn) PendingApproval(ctx context.Context, session uuid.UUID) (ledger.Approval, error) {
	a, err := scanApproval(t.queryRow(ctx, `SELECT `+approvalCols+` FROM approvals WHERE session_id = ? AND decided_at IS NULL ORDER BY created_at, gate_id LIMIT 1`, session[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return a, ledger.ErrNotFound
	}
	if err != nil {
		return a, fmt.Errorf("sqlstore: pending approval: %w", err)
	}
	return a, nil
}

// Approval implements ledger.ReadTx.
func (t *txn) Approval(ctx context.Context, gate uuid.UUID) (ledger.Approval, error) {
	a, err := scanApproval(t.queryRow(ctx, `SELECT `+approvalCols+` FROM approvals WHERE gate_id = ?`, gate[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return a, ledger.ErrNotFound
	}
	if err != nil {
		return a, fmt.Errorf("sqlstore: approval: %w", err)
	}
	return a, nil
}

// DecideApproval implements ledger.WriteTx.
func (t *txn) DecideApproval(ctx context.Context, gate uuid.UUID, approved bool, reason string, at int64) error {
	res, err := t.exec(ctx, `UPDATE approvals SET decided_at = ?, approved = ?, reason = ? WHERE gate_id = ? AND decided_at IS NULL`, at, approved, nullStr(reason), gate[:])
	if err := affectedOne(res, err, "decide approval"); !errors.Is(err, ledger.ErrNotFound) {
		return err
	}
	// Nothing changed: unknown, or decided before.
	if _, err := t.Approval(ctx, gate); err != nil {
		return err
	}
	return ledger.ErrAlreadyDecided
}

var _ ledger.WriteTx = (*txn)(nil)
