package ledgertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/ironvise/ironvise/internal/ledger"
)

// The randomized tamper test (issue acceptance 2): random single
// mutations of a sealed, checkpointed session, written with raw SQL that
// bypasses the append-only triggers, each undone before the next; every
// one must make VerifySession fail.
const (
	// tamperSeed fixes every random choice; it is printed, and changing it
	// here replays the test with other mutations.
	tamperSeed uint64 = 0x1d9e_7a11_5eed_0004
	// tamperMutations is the number of mutations checked per backend.
	tamperMutations = 1000
	// tamperWorkers each own a database with one target session, so the
	// mutations run in parallel without seeing each other.
	tamperWorkers = 4
	// fullCheckEvery is how often a worker compares its whole database
	// with the baseline (each undo is checked on what it touched).
	fullCheckEvery = 50
)

// The kinds of mutation, each chosen with equal probability.
const (
	kindPayload    = "payload byte"
	kindHash       = "hash byte"
	kindSignature  = "signature byte"
	kindCreated    = "created time"
	kindGoal       = "goal"
	kindKey        = "key"
	kindDelete     = "delete event"
	kindInsert     = "insert event"
	kindDuplicate  = "duplicate event"
	kindReorder    = "reorder events"
	kindTruncate   = "truncate tail"
	kindMerkle     = "merkle node"
	kindCheckpoint = "checkpoint"
	kindColumn     = "event column"
)

var tamperKinds = []string{
	kindPayload, kindHash, kindSignature, kindCreated, kindGoal, kindKey, kindDelete, kindInsert,
	kindDuplicate, kindReorder, kindTruncate, kindMerkle, kindCheckpoint, kindColumn,
}

// mutation is one tampering of the target and the statements that undo it.
type mutation struct {
	kind, what string
	do, undo   []Stmt
	// parts is what it may change besides the target's events.
	parts int
	// wantSeq is the sequence some failing check must name (-1: any).
	wantSeq int64
}

// tamperTarget is a worker's database with its sealed target session, as
// it was before any mutation.
type tamperTarget struct {
	e        *env
	tamper   func(...Stmt) error
	id       uuid.UUID
	sess     ledger.Session
	evs      []ledger.Event
	keys     []ledger.KeyRecord
	cp       ledger.Checkpoint // the newest checkpoint
	sealCP   ledger.Checkpoint // the checkpoint the seal names
	others   []ledger.Event    // covered events of other chains
	maxLog   int64
	nodes    []int64 // stored-hash indexes the session's proofs read
	baseline [6][32]byte
}

func newTamperTarget(t *testing.T, h Harness) *tamperTarget {
	e, id, evs := tamperSetup(t, h, true)
	tg := &tamperTarget{e: e, id: id, evs: evs}
	err := e.l.Backend().View(ctx(), func(tx ledger.ReadTx) error {
		var err error
		if tg.sess, err = tx.Session(ctx(), id); err != nil {
			return err
		}
		if tg.keys, err = tx.Keys(ctx(), id); err != nil {
			return err
		}
		if tg.cp, err = tx.LatestCheckpoint(ctx()); err != nil {
			return err
		}
		seal := evs[len(evs)-1]
		if seal.Type != ledger.TypeSessionSealed {
			return fmt.Errorf("last event is %s, want session_sealed", seal.Type)
		}
		// The seal is followed in the same transaction by the checkpoint
		// that names it, so that checkpoint's size is its index plus one.
		if tg.sealCP, err = tx.CheckpointBySize(ctx(), seal.LogIndex+1); err != nil {
			return err
		}
		all, err := tx.EventsByLog(ctx(), 0, 0)
		if err != nil {
			return err
		}
		for _, ev := range all {
			if ev.SessionID != id && ev.LogIndex < tg.cp.TreeSize {
				tg.others = append(tg.others, ev)
			}
		}
		tg.maxLog, err = tx.LogSize(ctx())
		tg.maxLog--
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tg.nodes = proofNodes(evs, tg.cp.TreeSize)
	tg.baseline = tg.digest(t, partAll)
	var restore func()
	tg.tamper, restore = e.db.Unguard(t)
	t.Cleanup(restore)
	return tg
}

// proofNodes returns the stored-hash indexes that verifying evs against a
// tree of size leaves reads: each covered leaf, its ancestors up to the
// complete subtree holding it, their siblings, and the roots of all the
// complete subtrees that make up the tree head.
func proofNodes(evs []ledger.Event, size int64) []int64 {
	spans := ledger.CompleteSubtrees(size)
	set := map[int64]bool{}
	for _, sp := range spans {
		set[sp.RootIndex()] = true
	}
	for _, ev := range evs {
		if ev.LogIndex >= size {
			continue
		}
		top := 0
		for _, sp := range spans {
			if ev.LogIndex < sp.End() {
				top = sp.Level
				break
			}
		}
		for l := 0; l <= top; l++ {
			a := ev.LogIndex >> l
			set[tlog.StoredHashIndex(l, a)] = true
			if l < top {
				set[tlog.StoredHashIndex(l, a^1)] = true
			}
		}
	}
	out := make([]int64, 0, len(set))
	for ix := range set {
		out = append(out, ix)
	}
	slices.Sort(out)
	return out
}

// Parts of the database a mutation may change besides the target's own
// events, which every check compares.
const (
	partSession = 1 << iota
	partKeys
	partCheckpoints
	partHashes
	partOthers // other chains' events
	partAll    = partSession | partKeys | partCheckpoints | partHashes | partOthers
)

// digest hashes the target's events and the parts asked for: the target's
// session row and keys, every checkpoint, every stored log hash, other
// chains' events. Equal digests mean an undo restored the database
// exactly. Parts not asked for are zero.
func (tg *tamperTarget) digest(t testing.TB, parts int) [6][32]byte {
	t.Helper()
	var out [6][32]byte
	sum := func(i int, f func(h io.Writer) error) error {
		h := sha256.New()
		if err := f(h); err != nil {
			return err
		}
		out[i] = [32]byte(h.Sum(nil))
		return nil
	}
	event := func(h io.Writer, ev *ledger.Event) {
		fmt.Fprintf(h, "e %d %s %d %q %x %d %x %x %x %q %q\n", ev.LogIndex, ev.SessionID, ev.Seq, ev.Type,
			ev.Payload, ev.CreatedMicros, ev.PrevHash, ev.Hash, ev.Signature, ev.KeyID, ev.Signer)
	}
	err := tg.e.l.Backend().View(ctx(), func(tx ledger.ReadTx) error {
		err := sum(0, func(h io.Writer) error {
			// Rows inserted beyond the log are all the target's.
			evs, err := tx.Events(ctx(), tg.id, 0, 0)
			for _, ev := range evs {
				event(h, &ev)
			}
			return err
		})
		if err == nil && parts&partSession != 0 {
			err = sum(1, func(h io.Writer) error {
				s, err := tx.Session(ctx(), tg.id)
				fmt.Fprintf(h, "s %q %q %q %q %d %d %d %x %q\n", s.Goal, s.GoalHash, s.PolicyHash, s.Status,
					s.CreatedAt.UnixMicro(), s.FinishedAt.UnixMicro(), s.SealedAt.UnixMicro(), []byte(s.PublicKey), s.DID)
				return err
			})
		}
		if err == nil && parts&partKeys != 0 {
			err = sum(2, func(h io.Writer) error {
				keys, err := tx.Keys(ctx(), tg.id)
				for _, k := range keys {
					fmt.Fprintf(h, "k %d %q %x %x %q %d\n", k.ValidFromSeq, k.KeyID, []byte(k.PublicKey), k.EncryptedPrivate, k.KEK, k.CreatedMicros)
				}
				return err
			})
		}
		if err == nil && parts&partCheckpoints != 0 {
			err = sum(3, func(h io.Writer) error {
				cps, err := tx.Checkpoints(ctx())
				for _, c := range cps {
					fmt.Fprintf(h, "c %d %x %d %q %x %x %x %d\n", c.TreeSize, c.Root, c.CreatedMicros, c.KeyID, []byte(c.PublicKey), c.Signature, c.Note, c.EventLogIndex)
				}
				return err
			})
		}
		if err == nil && parts&partHashes != 0 {
			err = sum(4, func(h io.Writer) error {
				hs, err := tx.HashRange(ctx(), 0, math.MaxInt64)
				for _, sh := range hs {
					fmt.Fprintf(h, "h %d %x\n", sh.Index, sh.Hash)
				}
				return err
			})
		}
		if err == nil && parts&partOthers != 0 {
			err = sum(5, func(h io.Writer) error {
				evs, err := tx.EventsByLog(ctx(), 0, 0)
				for _, ev := range evs {
					if ev.SessionID != tg.id {
						event(h, &ev)
					}
				}
				return err
			})
		}
		return err
	})
	if err != nil {
		t.Fatalf("digest: %v", err)
	}
	return out
}

// restored reports whether the parts asked for match the baseline.
func (tg *tamperTarget) restored(t testing.TB, parts int) bool {
	d := tg.digest(t, parts)
	for i := range d {
		if (i == 0 || parts&(1<<(i-1)) != 0) && d[i] != tg.baseline[i] {
			return false
		}
	}
	return true
}

// Row statements. Hashes and keys are bound as byte slices, integers as
// int64, so both databases store what the ledger wrote.

func insertEvent(ev ledger.Event) Stmt {
	return Stmt{`INSERT INTO events (log_index, session_id, seq, type, payload, created_at, prev_hash, hash, signature, key_id, signer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		[]any{ev.LogIndex, ev.SessionID[:], int64(ev.Seq), ev.Type, ev.Payload, ev.CreatedMicros, ev.PrevHash[:], ev.Hash[:], ev.Signature, ev.KeyID, ev.Signer}}
}

func insertKey(k ledger.KeyRecord) Stmt {
	return Stmt{`INSERT INTO keys (session_id, valid_from_seq, key_id, public_key, enc_private, kek, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		[]any{k.SessionID[:], int64(k.ValidFromSeq), k.KeyID, []byte(k.PublicKey), k.EncryptedPrivate, k.KEK, k.CreatedMicros}}
}

func (tg *tamperTarget) setEvent(seq uint64, col string, v any) Stmt {
	return Stmt{`UPDATE events SET ` + col + ` = ? WHERE session_id = ? AND seq = ?`, []any{v, tg.id[:], int64(seq)}}
}

// shiftFrom moves the events at sequence from and above one up, in two
// steps so that UNIQUE (session_id, seq) holds after every row.
func (tg *tamperTarget) shiftFrom(from uint64) []Stmt {
	return []Stmt{
		{`UPDATE events SET seq = seq + 1000000 WHERE session_id = ? AND seq >= ?`, []any{tg.id[:], int64(from)}},
		{`UPDATE events SET seq = seq - 999999 WHERE session_id = ? AND seq >= 1000000`, []any{tg.id[:]}},
	}
}

// restoreFrom undoes any change to the target's events at sequence from
// and above, and removes every row inserted beyond the original log.
func (tg *tamperTarget) restoreFrom(from uint64) []Stmt {
	out := []Stmt{
		{`DELETE FROM events WHERE session_id = ? AND seq >= ?`, []any{tg.id[:], int64(from)}},
		{`DELETE FROM events WHERE log_index > ?`, []any{tg.maxLog}},
	}
	for _, ev := range tg.evs[from:] {
		out = append(out, insertEvent(ev))
	}
	return out
}

func (tg *tamperTarget) restoreSession() Stmt {
	s := tg.sess
	return Stmt{`UPDATE sessions SET goal = ?, goal_hash = ?, policy_hash = ?, status = ?, finished_at = ?, sealed_at = ?, public_key = ?, did = ? WHERE id = ?`,
		[]any{s.Goal, s.GoalHash, nullable(s.PolicyHash), string(s.Status), micros(s.FinishedAt), micros(s.SealedAt), []byte(s.PublicKey), s.DID, tg.id[:]}}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func flipByte(rng *rand.Rand, b []byte) ([]byte, int) {
	out := bytes.Clone(b)
	i := rng.IntN(len(out))
	out[i] ^= byte(1 + rng.IntN(255))
	return out, i
}

// keyAt returns the key row in force at seq.
func (tg *tamperTarget) keyAt(seq uint64) ledger.KeyRecord {
	k := tg.keys[0]
	for _, r := range tg.keys {
		if r.ValidFromSeq <= seq {
			k = r
		}
	}
	return k
}

// forge returns a well-formed event at seq linked to prev, signed by the
// attacker's key (it has the database, not the session key) under the key
// id in force there; at seq 0, a genesis naming the attacker's key.
func (tg *tamperTarget) forge(rng *rand.Rand, atk *ledger.SigningKey, seq uint64, prev ledger.Hash, created int64, logIndex int64) ledger.Event {
	typ := []string{ledger.TypeObservation, ledger.TypeThought, ledger.TypeAction}[rng.IntN(3)]
	payload := fmt.Appendf(nil, `{"content":"forged %d","type":"%s"}`, rng.Uint32(), typ)
	if seq == 0 {
		// A replacement genesis naming the attacker's key and the goal.
		typ = ledger.TypeGenesis
		payload = fmt.Appendf(nil, `{"goal":%q,"goal_hash":%q,"policy_hash":%q,"session_public_key":%q,"type":"genesis"}`,
			tg.sess.Goal, tg.sess.GoalHash, tg.sess.PolicyHash, hex.EncodeToString(atk.Public()))
		prev = ledger.GenesisPrevHash(tg.id)
	}
	h := ledger.EventHash(prev, tg.id, seq, created, typ, payload)
	keyID := tg.keyAt(seq).KeyID
	if seq == 0 {
		keyID = atk.KeyID()
	}
	return ledger.Event{LogIndex: logIndex, SessionID: tg.id, Seq: seq, Type: typ, Payload: payload, CreatedMicros: created,
		PrevHash: prev, Hash: h, Signature: atk.Sign(h), KeyID: keyID, Signer: ledger.SignerSession}
}

// relink rewrites prev_hash and hash of the original events from index
// from on, now stored one sequence higher, so the chain links through a
// forged event with hash prev (their signatures stay the originals').
func (tg *tamperTarget) relink(from uint64, prev ledger.Hash) []Stmt {
	var out []Stmt
	for _, ev := range tg.evs[from:] {
		seq := ev.Seq + 1
		h := ledger.EventHash(prev, tg.id, seq, ev.CreatedMicros, ev.Type, ev.Payload)
		out = append(out, Stmt{`UPDATE events SET prev_hash = ?, hash = ? WHERE session_id = ? AND seq = ?`, []any{prev[:], h[:], tg.id[:], int64(seq)}})
		prev = h
	}
	return out
}

// mutate builds one mutation of the given kind.
func (tg *tamperTarget) mutate(rng *rand.Rand, atk *ledger.SigningKey, kind string) mutation {
	n := uint64(len(tg.evs))
	s := uint64(rng.IntN(int(n)))
	ev := tg.evs[s]
	m := mutation{kind: kind, wantSeq: int64(s)}
	switch kind {
	case kindPayload:
		p, i := flipByte(rng, ev.Payload)
		m.what = fmt.Sprintf("seq %d payload byte %d", s, i)
		m.do, m.undo = []Stmt{tg.setEvent(s, "payload", p)}, []Stmt{tg.setEvent(s, "payload", ev.Payload)}
	case kindHash:
		p, i := flipByte(rng, ev.Hash[:])
		m.what = fmt.Sprintf("seq %d hash byte %d", s, i)
		m.do, m.undo = []Stmt{tg.setEvent(s, "hash", p)}, []Stmt{tg.setEvent(s, "hash", ev.Hash[:])}
	case kindSignature:
		p, i := flipByte(rng, ev.Signature)
		m.what = fmt.Sprintf("seq %d signature byte %d", s, i)
		m.do, m.undo = []Stmt{tg.setEvent(s, "signature", p)}, []Stmt{tg.setEvent(s, "signature", ev.Signature)}
	case kindCreated:
		d := 1 + rng.Int64N(1_000_000_000)
		if rng.IntN(2) == 0 {
			d = -d
		}
		m.what = fmt.Sprintf("seq %d created_at %+dµs", s, d)
		m.do, m.undo = []Stmt{tg.setEvent(s, "created_at", ev.CreatedMicros+d)}, []Stmt{tg.setEvent(s, "created_at", ev.CreatedMicros)}
	case kindGoal:
		other := tg.sess.Goal + []string{" ", "!", " and exfiltrate", "."}[rng.IntN(4)]
		m.wantSeq, m.parts = 0, partSession
		switch rng.IntN(4) {
		case 0:
			m.what = "goal changed"
			m.do = []Stmt{{`UPDATE sessions SET goal = ? WHERE id = ?`, []any{other, tg.id[:]}}}
		case 1:
			m.what = "goal and a matching goal_hash"
			m.do = []Stmt{{`UPDATE sessions SET goal = ?, goal_hash = ? WHERE id = ?`, []any{other, ledger.GoalHash(other), tg.id[:]}}}
		case 2:
			m.what = "goal_hash changed"
			m.do = []Stmt{{`UPDATE sessions SET goal_hash = ? WHERE id = ?`, []any{hex.EncodeToString(randBytesFrom(rng, 32)), tg.id[:]}}}
		default:
			m.what = "policy_hash changed"
			m.do = []Stmt{{`UPDATE sessions SET policy_hash = ? WHERE id = ?`, []any{hex.EncodeToString(randBytesFrom(rng, 32)), tg.id[:]}}}
		}
		m.undo = []Stmt{tg.restoreSession()}
	case kindKey:
		k := tg.keys[rng.IntN(len(tg.keys))]
		m.wantSeq, m.parts = int64(k.ValidFromSeq), partKeys|partSession
		restore := Stmt{`UPDATE keys SET public_key = ?, key_id = ?, valid_from_seq = ? WHERE session_id = ? AND valid_from_seq = ?`,
			[]any{[]byte(k.PublicKey), k.KeyID, int64(k.ValidFromSeq), tg.id[:], int64(k.ValidFromSeq)}}
		switch rng.IntN(6) {
		case 0:
			p, i := flipByte(rng, k.PublicKey)
			m.what = fmt.Sprintf("key row %d public key byte %d", k.ValidFromSeq, i)
			m.do = []Stmt{{`UPDATE keys SET public_key = ? WHERE session_id = ? AND valid_from_seq = ?`, []any{p, tg.id[:], int64(k.ValidFromSeq)}}}
		case 1:
			other := keyFrom(rng)
			m.what = fmt.Sprintf("key row %d replaced (key and id)", k.ValidFromSeq)
			m.do = []Stmt{{`UPDATE keys SET public_key = ?, key_id = ? WHERE session_id = ? AND valid_from_seq = ?`, []any{[]byte(other.Public()), other.KeyID(), tg.id[:], int64(k.ValidFromSeq)}}}
		case 2:
			m.what = fmt.Sprintf("key row %d key id", k.ValidFromSeq)
			m.do = []Stmt{{`UPDATE keys SET key_id = ? WHERE session_id = ? AND valid_from_seq = ?`, []any{hex.EncodeToString(randBytesFrom(rng, 8)), tg.id[:], int64(k.ValidFromSeq)}}}
		case 3:
			to := int64(n) + 5 + rng.Int64N(100)
			m.what = fmt.Sprintf("key row %d moved to seq %d", k.ValidFromSeq, to)
			m.do = []Stmt{{`UPDATE keys SET valid_from_seq = ? WHERE session_id = ? AND valid_from_seq = ?`, []any{to, tg.id[:], int64(k.ValidFromSeq)}}}
			restore.Args[4] = to
		case 4:
			p, i := flipByte(rng, tg.sess.PublicKey)
			m.what = fmt.Sprintf("session row public key byte %d", i)
			m.wantSeq = 0
			m.do = []Stmt{{`UPDATE sessions SET public_key = ? WHERE id = ?`, []any{p, tg.id[:]}}}
			restore = tg.restoreSession()
		default:
			other := keyFrom(rng)
			m.what = "session row did:key"
			m.wantSeq = 0
			m.do = []Stmt{{`UPDATE sessions SET did = ? WHERE id = ?`, []any{ledger.DIDKey(other.Public()), tg.id[:]}}}
			restore = tg.restoreSession()
		}
		m.undo = []Stmt{restore}
	case kindDelete:
		m.what = fmt.Sprintf("seq %d (%s) deleted", s, ev.Type)
		m.do = []Stmt{{`DELETE FROM events WHERE session_id = ? AND seq = ?`, []any{tg.id[:], int64(s)}}}
		m.undo = []Stmt{insertEvent(ev)}
	case kindInsert:
		at := uint64(rng.IntN(int(n) + 1))
		m.wantSeq = int64(at)
		var prev ledger.Hash
		created := tg.evs[0].CreatedMicros
		if at > 0 {
			prev, created = tg.evs[at-1].Hash, tg.evs[at-1].CreatedMicros+1
		}
		f := tg.forge(rng, atk, at, prev, created, tg.maxLog+1)
		if at == n {
			m.what = fmt.Sprintf("forged %s appended at seq %d", f.Type, at)
			m.do = []Stmt{insertEvent(f)}
			m.undo = tg.restoreFrom(at)
			break
		}
		m.do = append(tg.shiftFrom(at), insertEvent(f))
		m.what = fmt.Sprintf("forged %s inserted at seq %d", f.Type, at)
		if rng.IntN(2) == 0 {
			m.what += ", later events relinked"
			m.do = append(m.do, tg.relink(at, f.Hash)...)
		}
		m.undo = tg.restoreFrom(at)
	case kindDuplicate:
		d := ev
		d.LogIndex = tg.maxLog + 1
		if rng.IntN(2) == 0 {
			d.Seq = n
			m.what = fmt.Sprintf("seq %d duplicated at the tail", s)
			m.do = []Stmt{insertEvent(d)}
			m.undo = tg.restoreFrom(n)
		} else {
			d.Seq = s + 1
			m.what = fmt.Sprintf("seq %d duplicated in place", s)
			m.do = append(tg.shiftFrom(s+1), insertEvent(d))
			m.undo = tg.restoreFrom(s + 1)
		}
		m.wantSeq = int64(d.Seq)
	case kindReorder:
		u := (s + 1 + uint64(rng.IntN(int(n)-1))) % n
		lo, hi := min(s, u), max(s, u)
		m.wantSeq = int64(lo)
		if rng.IntN(2) == 0 {
			m.what = fmt.Sprintf("seqs %d and %d swapped", lo, hi)
			swap := []Stmt{
				{`UPDATE events SET seq = 1000000 WHERE session_id = ? AND seq = ?`, []any{tg.id[:], int64(lo)}},
				{`UPDATE events SET seq = ? WHERE session_id = ? AND seq = ?`, []any{int64(lo), tg.id[:], int64(hi)}},
				{`UPDATE events SET seq = ? WHERE session_id = ? AND seq = 1000000`, []any{int64(hi), tg.id[:]}},
			}
			m.do, m.undo = swap, swap
			break
		}
		a, b := tg.evs[lo].LogIndex, tg.evs[hi].LogIndex
		m.what = fmt.Sprintf("log positions of seqs %d and %d swapped", lo, hi)
		if rng.IntN(2) == 0 {
			// Swap with another chain's event instead.
			o := tg.others[rng.IntN(len(tg.others))]
			a, b = tg.evs[s].LogIndex, o.LogIndex
			m.wantSeq, m.parts = int64(s), partOthers
			m.what = fmt.Sprintf("log position of seq %d swapped with log index %d of another chain", s, o.LogIndex)
		}
		tmp := tg.maxLog + 1000000
		swap := []Stmt{
			{`UPDATE events SET log_index = ? WHERE log_index = ?`, []any{tmp, a}},
			{`UPDATE events SET log_index = ? WHERE log_index = ?`, []any{a, b}},
			{`UPDATE events SET log_index = ? WHERE log_index = ?`, []any{b, tmp}},
		}
		m.do, m.undo = swap, swap
	case kindTruncate:
		from := uint64(1 + rng.IntN(int(n)-1))
		m.wantSeq, m.parts = int64(from), partSession|partKeys
		m.do = []Stmt{{`DELETE FROM events WHERE session_id = ? AND seq >= ?`, []any{tg.id[:], int64(from)}}}
		m.undo = tg.restoreFrom(from)
		m.what = fmt.Sprintf("events from seq %d deleted", from)
		switch rng.IntN(3) {
		case 1:
			// Hide the seal's absence: the row says running again.
			m.what += ", session row unsealed"
			m.do = append(m.do, Stmt{`UPDATE sessions SET status = 'running', finished_at = NULL, sealed_at = NULL WHERE id = ?`, []any{tg.id[:]}})
			m.undo = append(m.undo, tg.restoreSession())
		case 2:
			// …and drop the key rows the remaining chain no longer declares.
			m.what += ", session row unsealed, later key rows deleted"
			m.do = append(m.do,
				Stmt{`UPDATE sessions SET status = 'running', finished_at = NULL, sealed_at = NULL WHERE id = ?`, []any{tg.id[:]}},
				Stmt{`DELETE FROM keys WHERE session_id = ? AND valid_from_seq > ?`, []any{tg.id[:], int64(from)}})
			m.undo = append(m.undo, tg.restoreSession())
			for _, k := range tg.keys {
				if k.ValidFromSeq > from {
					m.undo = slices.Insert(m.undo, 0, Stmt{`DELETE FROM keys WHERE session_id = ? AND valid_from_seq = ?`, []any{tg.id[:], int64(k.ValidFromSeq)}})
					m.undo = append(m.undo, insertKey(k))
				}
			}
		}
	case kindMerkle:
		ix := tg.nodes[rng.IntN(len(tg.nodes))]
		var orig []byte
		tg.e.l.Backend().View(ctx(), func(tx ledger.ReadTx) error {
			hs, err := tx.ReadHashes(ctx(), []int64{ix})
			if err == nil {
				orig = hs[0][:]
			}
			return err
		})
		level, idx := storedLevel(ix)
		m.wantSeq, m.parts = -1, partHashes
		for _, e := range tg.evs {
			if level == 0 && e.LogIndex == idx {
				m.wantSeq = int64(e.Seq) // a leaf is pinned to its own event
			}
		}
		nv := randBytesFrom(rng, 32)
		m.what = fmt.Sprintf("node level %d index %d replaced", level, idx)
		if rng.IntN(2) == 0 {
			var i int
			nv, i = flipByte(rng, orig)
			m.what = fmt.Sprintf("node level %d index %d byte %d", level, idx, i)
		}
		m.do = []Stmt{{`UPDATE log_hashes SET hash = ? WHERE idx = ?`, []any{nv, ix}}}
		m.undo = []Stmt{{`UPDATE log_hashes SET hash = ? WHERE idx = ?`, []any{orig, ix}}}
	case kindCheckpoint:
		c, which := tg.cp, "newest"
		m.wantSeq, m.parts = -1, partCheckpoints
		if rng.IntN(2) == 0 {
			c, which = tg.sealCP, "seal's"
			m.wantSeq = int64(n - 1)
		}
		if c.TreeSize == tg.cp.TreeSize {
			which = "newest (also the seal's)"
			m.wantSeq = -1
		}
		var col string
		var orig, nv []byte
		var i int
		switch rng.IntN(3) {
		case 0:
			col, orig = "root_hash", c.Root[:]
			nv, i = flipByte(rng, orig)
		case 1:
			col, orig = "signature", c.Signature
			nv, i = flipByte(rng, orig)
		default:
			// The signed body: origin, size and root lines.
			col, orig = "note", c.Note
			body := bytes.Index(orig, []byte("\n\n")) + 1
			nv, i = flipByte(rng, orig[:body])
			nv = append(nv, orig[body:]...)
		}
		m.what = fmt.Sprintf("%s checkpoint %s byte %d", which, col, i)
		m.do = []Stmt{{`UPDATE checkpoints SET ` + col + ` = ? WHERE tree_size = ?`, []any{nv, c.TreeSize}}}
		m.undo = []Stmt{{`UPDATE checkpoints SET ` + col + ` = ? WHERE tree_size = ?`, []any{orig, c.TreeSize}}}
	case kindColumn:
		switch rng.IntN(5) {
		case 0:
			typ := ledger.TypeThought
			if ev.Type == typ {
				typ = ledger.TypeObservation
			}
			m.what = fmt.Sprintf("seq %d type %s → %s", s, ev.Type, typ)
			m.do, m.undo = []Stmt{tg.setEvent(s, "type", typ)}, []Stmt{tg.setEvent(s, "type", ev.Type)}
		case 1:
			k := tg.keys[rng.IntN(len(tg.keys))].KeyID
			if k == ev.KeyID {
				k = tg.e.issuer.KeyID()
			}
			m.what = fmt.Sprintf("seq %d key_id → %s", s, k)
			m.do, m.undo = []Stmt{tg.setEvent(s, "key_id", k)}, []Stmt{tg.setEvent(s, "key_id", ev.KeyID)}
		case 2:
			sg := ledger.SignerIssuer
			if ev.Signer == sg {
				sg = ledger.SignerSession
			}
			m.what = fmt.Sprintf("seq %d signer → %s", s, sg)
			m.do, m.undo = []Stmt{tg.setEvent(s, "signer", sg)}, []Stmt{tg.setEvent(s, "signer", ev.Signer)}
		case 3:
			p, i := flipByte(rng, ev.PrevHash[:])
			m.what = fmt.Sprintf("seq %d prev_hash byte %d", s, i)
			m.do, m.undo = []Stmt{tg.setEvent(s, "prev_hash", p)}, []Stmt{tg.setEvent(s, "prev_hash", ev.PrevHash[:])}
		default:
			to := tg.maxLog + 1 + rng.Int64N(1000)
			m.what = fmt.Sprintf("seq %d moved to log index %d", s, to)
			m.wantSeq = -1
			m.do, m.undo = []Stmt{tg.setEvent(s, "log_index", to)}, []Stmt{tg.setEvent(s, "log_index", ev.LogIndex)}
		}
	default:
		panic("ledgertest: unknown mutation kind " + kind)
	}
	return m
}

// storedLevel inverts tlog.StoredHashIndex.
func storedLevel(ix int64) (level int, n int64) {
	// Every leaf n adds the hashes (0, n), (1, n/2), … up to its level;
	// find the leaf whose block holds ix.
	lo, hi := int64(0), ix+1
	for lo < hi {
		mid := (lo + hi) / 2
		if tlog.StoredHashIndex(0, mid) <= ix {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	leaf := lo - 1
	level = int(ix - tlog.StoredHashIndex(0, leaf))
	return level, leaf >> level
}

// keyFrom derives a key from rng, so the attacker's keys replay with the
// seed.
func keyFrom(rng *rand.Rand) *ledger.SigningKey {
	k, err := ledger.SigningKeyFromSeed(randBytesFrom(rng, 32))
	if err != nil {
		panic(err) // 32 bytes is always a valid seed
	}
	return k
}

func randBytesFrom(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// tamperOutcome is what verification said about one mutation.
type tamperOutcome struct {
	kind, what string
	failed     [5]bool
	first      string
	detected   bool
	seqOK      bool
	problem    string
}

func testTamperRandomized(t *testing.T, h Harness) {
	t.Logf("randomized tamper test: seed %#x, %d mutations, %d workers", tamperSeed, tamperMutations, tamperWorkers)
	// The kind of every mutation comes from one stream; each worker draws
	// its parameters from its own, so the run is the same whatever the
	// scheduling.
	kr := rand.New(rand.NewPCG(tamperSeed, 0))
	kinds := make([]string, tamperMutations)
	for i := range kinds {
		kinds[i] = tamperKinds[kr.IntN(len(tamperKinds))]
	}
	outcomes := make([]tamperOutcome, tamperMutations)
	start := time.Now()
	t.Run("workers", func(t *testing.T) {
		for w := range tamperWorkers {
			t.Run(fmt.Sprint(w), func(t *testing.T) {
				t.Parallel()
				tg := newTamperTarget(t, h)
				rng := rand.New(rand.NewPCG(tamperSeed, uint64(w)+1))
				atk := keyFrom(rng)
				for i := w; i < tamperMutations; i += tamperWorkers {
					outcomes[i] = tg.check(t, tg.mutate(rng, atk, kinds[i]))
					if t.Failed() {
						return
					}
					if (i/tamperWorkers)%fullCheckEvery == fullCheckEvery-1 && !tg.restored(t, partAll) {
						t.Fatalf("after mutation %d (%s: %s) the database differs from the baseline", i, outcomes[i].kind, outcomes[i].what)
					}
				}
				if !tg.restored(t, partAll) {
					t.Fatal("after the last mutation the database differs from the baseline")
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	elapsed := time.Since(start)
	// The distribution: per kind, how many and which check failed first;
	// per check, how many mutations it caught.
	type row struct {
		n     int
		first map[string]int
	}
	byKind := map[string]*row{}
	var caught [5]int
	var missed []tamperOutcome
	for _, o := range outcomes {
		r := byKind[o.kind]
		if r == nil {
			r = &row{first: map[string]int{}}
			byKind[o.kind] = r
		}
		r.n++
		r.first[o.first]++
		for i, f := range o.failed {
			if f {
				caught[i]++
			}
		}
		if !o.detected || !o.seqOK {
			missed = append(missed, o)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d mutations (seed %#x) in %v, %d undetected:\n", tamperMutations, tamperSeed, elapsed.Round(time.Millisecond), countUndetected(outcomes))
	names := make([]string, 0, len(byKind))
	for k := range byKind {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		r := byKind[k]
		var parts []string
		for _, c := range append(ledger.CheckNames[:], "none") {
			if r.first[c] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", c, r.first[c]))
			}
		}
		fmt.Fprintf(&b, "  %-16s %4d  first failing check: %s\n", k, r.n, strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, "  each check failed on: ")
	for i, c := range ledger.CheckNames {
		fmt.Fprintf(&b, "%s %d  ", c, caught[i])
	}
	t.Log(b.String())
	for _, o := range missed {
		if !o.detected {
			t.Errorf("undetected: %s: %s", o.kind, o.what)
		} else {
			t.Errorf("detected without naming the tampered seq: %s: %s: %s", o.kind, o.what, o.problem)
		}
	}
}

func countUndetected(os []tamperOutcome) int {
	n := 0
	for _, o := range os {
		if !o.detected {
			n++
		}
	}
	return n
}

// check applies m, verifies, undoes m and makes sure the database is
// back to the baseline.
func (tg *tamperTarget) check(t *testing.T, m mutation) tamperOutcome {
	o := tamperOutcome{kind: m.kind, what: m.what, first: "none"}
	if err := tg.tamper(m.do...); err != nil {
		t.Errorf("%s: %s: applying the mutation: %v", m.kind, m.what, err)
		return o
	}
	r, err := tg.e.l.VerifySession(ctx(), tg.id)
	if err != nil {
		t.Errorf("%s: %s: VerifySession: %v", m.kind, m.what, err)
	}
	if err := tg.tamper(m.undo...); err != nil {
		t.Errorf("%s: %s: undoing the mutation: %v", m.kind, m.what, err)
		return o
	}
	// Every mutation's undo is checked on what it may touch. Only the
	// target's events are ever restored wholesale (which could repair an
	// earlier bad undo unnoticed), and those are always compared; a
	// leftover anywhere else persists, so the full comparison every
	// fullCheckEvery mutations and at the end finds it.
	if !tg.restored(t, m.parts) {
		t.Errorf("%s: %s: undoing it did not restore the database", m.kind, m.what)
		return o
	}
	o.detected = !r.OK()
	o.seqOK = m.wantSeq < 0
	var probs []string
	for i, c := range r.Checks() {
		if c.OK {
			continue
		}
		o.failed[i] = true
		if c.Seq == m.wantSeq {
			o.seqOK = true
		}
		probs = append(probs, fmt.Sprintf("%s at %d: %s", ledger.CheckNames[i], c.Seq, c.Problem))
	}
	o.problem = strings.Join(probs, "; ")
	if name, _, ok := r.FirstFailure(); ok {
		o.first = name
	}
	if !o.seqOK {
		o.problem = fmt.Sprintf("want a check failing at seq %d, got: %s", m.wantSeq, o.problem)
	}
	return o
}
