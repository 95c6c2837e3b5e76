package ledgertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/ironvise/ironvise/internal/ledger"
)

func testImmutability(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "immutable")
	appendN(t, e.l, s.ID, 3)
	if _, err := e.l.Checkpoint(ctx()); err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		`UPDATE events SET payload = payload WHERE seq = 2`,
		`DELETE FROM events WHERE seq = 4`,
		`UPDATE keys SET key_id = 'x'`,
		`DELETE FROM keys`,
		`UPDATE log_hashes SET hash = hash WHERE idx = 0`,
		`DELETE FROM log_hashes WHERE idx = 0`,
		`UPDATE checkpoints SET created_at = 0`,
		`DELETE FROM checkpoints`,
		`UPDATE meta SET value = value`,
		`DELETE FROM meta`,
		// The session row's anchored fields (migrations/0002_sessions_guard.sql).
		`UPDATE sessions SET created_at = 0`,
		`UPDATE sessions SET agent_loop = NOT agent_loop`,
		`UPDATE sessions SET goal = 'other'`,
		`DELETE FROM sessions`,
	}
	if e.db.HasTruncate() {
		stmts = append(stmts, `TRUNCATE events CASCADE`, `TRUNCATE keys`, `TRUNCATE log_hashes`, `TRUNCATE checkpoints`, `TRUNCATE meta`)
	}
	for _, q := range stmts {
		t.Run(q, func(t *testing.T) {
			err := e.db.Exec(t, q)
			if err == nil {
				t.Fatalf("%s succeeded; the append-only trigger must reject it", q)
			}
			if !strings.Contains(err.Error(), "append-only") {
				t.Fatalf("%s failed with %v; want the append-only trigger's error", q, err)
			}
		})
	}
	mustVerify(t, e.l, s.ID)
}

// tamperSetup builds a session with a rotation, all of it covered by a
// checkpoint: seqs 0 genesis, 1 prompt, 2..5 observations, 6 key
// rotation, 7..8 observations.
func tamperSetup(t *testing.T, h Harness, sealed bool) (*env, uuid.UUID, []ledger.Event) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "tamper target")
	appendN(t, e.l, s.ID, 4)
	if _, err := e.l.RotateKey(ctx(), s.ID); err != nil {
		t.Fatal(err)
	}
	appendN(t, e.l, s.ID, 2)
	if sealed {
		if _, err := e.l.Seal(ctx(), s.ID, "t"); err != nil {
			t.Fatal(err)
		}
	}
	// Another session's events after it, so its leaves are not the last.
	other := newSession(t, e.l, "bystander")
	appendN(t, e.l, other.ID, 2)
	if _, err := e.l.Checkpoint(ctx()); err != nil {
		t.Fatal(err)
	}
	evs, err := e.l.Events(ctx(), s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, e.l, s.ID)
	return e, s.ID, evs
}

// rotateToAttacker is ForgeRotation on e's database.
func rotateToAttacker(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event, claimOldKey bool) {
	ForgeRotation(id, evs, claimOldKey, func(query string, args ...any) { e.db.Tamper(t, query, args...) })
}

// ForgeRotation rewrites the chain id, whose events are evs and whose key
// rotation is at seq 6 (the new key valid from seq 7, as in the suite's
// tamper fixtures), from the rotation on as someone without the chain's
// keys would: the rotation names a key of the attacker's, every event from
// it on is re-linked and signed with that key, and the key table agrees.
// claimOldKey leaves the rotation the id of the key it replaces; otherwise
// it names the attacker's. exec runs each statement on the database, its
// triggers out of the way, and fails the test on an error.
func ForgeRotation(id uuid.UUID, evs []ledger.Event, claimOldKey bool, exec func(query string, args ...any)) {
	atk, _ := ledger.GenerateSigningKey(nil)
	atkID := ledger.KeyID(atk.Public())
	prev := evs[5].Hash
	for i := 6; i < len(evs); i++ {
		ev := evs[i]
		payload, keyID := ev.Payload, atkID
		if i == 6 {
			payload = fmt.Appendf(nil, `{"new_public_key":"%s","rotation_index":1,"type":"key_rotation"}`, hex.EncodeToString(atk.Public()))
			if claimOldKey {
				keyID = ev.KeyID
			}
		}
		hash := ledger.EventHash(prev, id, ev.Seq, ev.CreatedMicros, ev.Type, payload)
		exec(`UPDATE events SET payload = ?, prev_hash = ?, hash = ?, signature = ?, key_id = ? WHERE session_id = ? AND seq = ?`,
			payload, prev[:], hash[:], atk.Sign(hash), keyID, id[:], int64(ev.Seq))
		prev = hash
	}
	exec(`UPDATE keys SET public_key = ?, key_id = ? WHERE session_id = ? AND valid_from_seq = 7`, []byte(atk.Public()), atkID, id[:])
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func maxLogIndex(t *testing.T, e *env) int64 {
	n, err := e.l.LogSize(ctx())
	if err != nil {
		t.Fatal(err)
	}
	return n - 1
}

func testTamper(t *testing.T, h Harness) {
	tests := []struct {
		name    string
		sealed  bool
		tamper  func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event)
		check   string
		wantSeq int64
	}{
		{"payload byte", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			p := []byte(strings.Replace(string(evs[3].Payload), "output", "Output", 1))
			e.db.Tamper(t, `UPDATE events SET payload = ? WHERE session_id = ? AND seq = 3`, p, id[:])
		}, "chain", 3},
		{"hash", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE events SET hash = ? WHERE session_id = ? AND seq = 3`, randBytes(32), id[:])
		}, "chain", 3},
		{"signature", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			sig := append([]byte{}, evs[3].Signature...)
			sig[10] ^= 0x40
			e.db.Tamper(t, `UPDATE events SET signature = ? WHERE session_id = ? AND seq = 3`, sig, id[:])
		}, "signatures", 3},
		{"created time", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE events SET created_at = created_at + 1 WHERE session_id = ? AND seq = 3`, id[:])
		}, "chain", 3},
		{"goal", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE sessions SET goal = ? WHERE id = ?`, "something else", id[:])
		}, "goal", 0},
		{"goal and goal hash", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE sessions SET goal = ?, goal_hash = ? WHERE id = ?`, "x", ledger.GoalHash("x"), id[:])
		}, "goal", 0},
		{"key", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE keys SET public_key = ? WHERE session_id = ? AND valid_from_seq = 0`, randBytes(32), id[:])
		}, "signatures", 0},
		{"session row key", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			// The key listings show: another key and its did:key.
			atk, _ := ledger.GenerateSigningKey(nil)
			e.db.Tamper(t, `UPDATE sessions SET public_key = ?, did = ? WHERE id = ?`, []byte(atk.Public()), ledger.DIDKey(atk.Public()), id[:])
		}, "signatures", 0},
		// Issue 23 item 1: every field a report or certificate shows is
		// bound to a signed event (the trigger is dropped here).
		{"session created_at", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE sessions SET created_at = created_at - 3600000000 WHERE id = ?`, id[:])
		}, "goal", 0},
		{"session agent_loop", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			// An agent session shown as an exec one (or the reverse).
			e.db.Tamper(t, `UPDATE sessions SET agent_loop = NOT agent_loop WHERE id = ?`, id[:])
		}, "goal", 0},
		{"session sealed_at", true, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE sessions SET sealed_at = sealed_at + 86400000000 WHERE id = ?`, id[:])
		}, "seal", 9},
		{"session finished_at", true, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE sessions SET finished_at = finished_at - 86400000000 WHERE id = ?`, id[:])
		}, "seal", 9},
		{"session status sealed", true, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE sessions SET status = 'failed' WHERE id = ?`, id[:])
		}, "seal", 9},
		{"running session with finished_at", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE sessions SET finished_at = created_at WHERE id = ?`, id[:])
		}, "seal", -1},
		{"session row model", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			// Listings would claim another model and a stronger tier than
			// the signed genesis records.
			e.db.Tamper(t, `UPDATE sessions SET llm_model = ?, sandbox_tier = ? WHERE id = ?`, "trusted-model", "firecracker", id[:])
		}, "goal", 0},
		{"deleted event", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `DELETE FROM events WHERE session_id = ? AND seq = 3`, id[:])
		}, "chain", 3},
		{"inserted event", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			// A well-linked forged event at the tail, signed by a key the
			// chain never declared.
			tip := evs[len(evs)-1]
			key, _ := ledger.GenerateSigningKey(nil)
			payload := []byte(`{"content":"forged","type":"observation"}`)
			seq := tip.Seq + 1
			hash := ledger.EventHash(tip.Hash, id, seq, tip.CreatedMicros+1, "observation", payload)
			e.db.Tamper(t, `INSERT INTO events (log_index, session_id, seq, type, payload, created_at, prev_hash, hash, signature, key_id, signer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				maxLogIndex(t, e)+1, id[:], int64(seq), "observation", payload, tip.CreatedMicros+1, tip.Hash[:], hash[:], key.Sign(hash), tip.KeyID, "session")
		}, "signatures", 9},
		{"duplicated event", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			d := evs[3]
			e.db.Tamper(t, `INSERT INTO events (log_index, session_id, seq, type, payload, created_at, prev_hash, hash, signature, key_id, signer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				maxLogIndex(t, e)+1, id[:], int64(len(evs)), d.Type, d.Payload, d.CreatedMicros, d.PrevHash[:], d.Hash[:], d.Signature, d.KeyID, d.Signer)
		}, "chain", 9},
		{"reordered events", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE events SET seq = 1000000 WHERE session_id = ? AND seq = 3`, id[:])
			e.db.Tamper(t, `UPDATE events SET seq = 3 WHERE session_id = ? AND seq = 4`, id[:])
			e.db.Tamper(t, `UPDATE events SET seq = 4 WHERE session_id = ? AND seq = 1000000`, id[:])
		}, "chain", 3},
		{"tail truncated after checkpoint", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `DELETE FROM events WHERE session_id = ? AND seq >= 7`, id[:])
		}, "log", 7},
		{"seal removed", true, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `DELETE FROM events WHERE session_id = ? AND seq = 9`, id[:])
		}, "seal", 9},
		{"rotation signed by the wrong key", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			// A complete rewrite from the rotation on by someone without
			// the old key: the chain links, the key table agrees, but the
			// rotation is not signed by the key it replaces.
			rotateToAttacker(t, e, id, evs, false)
		}, "signatures", 6},
		{"checkpoint root", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			cp, _ := e.l.LatestCheckpoint(ctx())
			e.db.Tamper(t, `UPDATE checkpoints SET root_hash = ? WHERE tree_size = ?`, randBytes(32), cp.TreeSize)
		}, "log", -1},
		{"log interior node", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE log_hashes SET hash = ? WHERE idx = ?`, randBytes(32), tlog.StoredHashIndex(1, evs[4].LogIndex>>1))
		}, "log", -2},
		{"log leaf hash", false, func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE log_hashes SET hash = ? WHERE idx = ?`, randBytes(32), tlog.StoredHashIndex(0, evs[3].LogIndex))
		}, "log", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, id, evs := tamperSetup(t, h, tc.sealed)
			tc.tamper(t, e, id, evs)
			r, err := e.l.VerifySession(ctx(), id)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() {
				t.Fatal("tampering went undetected: all five checks passed")
			}
			var got ledger.Check
			for i, n := range ledger.CheckNames {
				if n == tc.check {
					got = r.Checks()[i]
				}
			}
			if got.OK {
				name, c, _ := r.FirstFailure()
				t.Fatalf("the %s check passed; detected instead by %s at seq %d: %s", tc.check, name, c.Seq, c.Problem)
			}
			want := tc.wantSeq
			if want == -2 {
				// The first event below the rewritten level-1 node.
				want = 4
				if evs[4].LogIndex%2 == 1 {
					want = 3
				}
			}
			if got.Seq != want {
				t.Fatalf("%s check failed at seq %d (%s); want seq %d", tc.check, got.Seq, got.Problem, want)
			}
			if got.Problem == "" {
				t.Fatal("failure without a problem description")
			}
			// The full verification (parallel, sharing what it learns
			// about the log) reports the chain exactly as VerifySession.
			full, err := e.l.VerifyFull(ctx())
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(full.Failed, func(f ledger.Report) bool { return f.SessionID == id })
			if i < 0 || full.Failed[i].Checks() != r.Checks() {
				t.Fatalf("VerifyFull's report of the chain differs from VerifySession's %+v: %+v", r.Checks(), full.Failed)
			}
		})
	}
}

func testStartup(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "startup")
	appendN(t, e.l, s.ID, 5)
	done := newSession(t, e.l, "done")
	appendN(t, e.l, done.ID, 3)
	e.l.Seal(ctx(), done.ID, "x")
	appendN(t, e.l, s.ID, 2) // after the seal's checkpoint: uncovered tail
	var seen []ledger.VerifyProgress
	var rep ledger.StartupReport
	for _, f := range []func() (ledger.StartupReport, error){
		func() (ledger.StartupReport, error) { return e.l.VerifyStartup(ctx()) },
		func() (ledger.StartupReport, error) {
			return e.l.VerifyFullProgress(ctx(), func(p ledger.VerifyProgress) { seen = append(seen, p) })
		},
	} {
		var err error
		if rep, err = f(); err != nil || !rep.OK() {
			t.Fatalf("clean ledger: %+v, %v", rep.Problems, err)
		}
	}
	// Progress counts every chain once (the instance chain and two
	// sessions) and, at the end, every event of the log.
	for i, p := range seen {
		if p.Done != i+1 || p.Total != 3 {
			t.Fatalf("progress %d = %+v; want %d of 3 done", i, p, i+1)
		}
	}
	if len(seen) != 3 || seen[2].Events != rep.LogSize {
		t.Fatalf("progress = %+v; want 3 reports ending at the log's %d events", seen, rep.LogSize)
	}
	// A changed signature in a running session's tail: startup sees it.
	evs, _ := e.l.Events(ctx(), s.ID, 0, 0)
	sig := append([]byte{}, evs[len(evs)-1].Signature...)
	sig[0] ^= 1
	e.db.Tamper(t, `UPDATE events SET signature = ? WHERE session_id = ? AND seq = ?`, sig, s.ID[:], int64(len(evs)-1))
	rep, err := e.l.VerifyStartup(ctx())
	if err != nil || rep.OK() || !errors.Is(rep.Err(), ledger.ErrTampered) {
		t.Fatalf("startup after tampering: %+v, %v; want a problem", rep.Problems, err)
	}
	// A rewritten stored log hash inside the sealed, checkpointed session:
	// only the full scan rebuilds the tree and sees it.
	devs, _ := e.l.Events(ctx(), done.ID, 0, 0)
	e.db.Tamper(t, `UPDATE log_hashes SET hash = ? WHERE idx = ?`, randBytes(32), tlog.StoredHashIndex(0, devs[2].LogIndex))
	full, err := e.l.VerifyFull(ctx())
	if err != nil || full.OK() {
		t.Fatalf("full verification after tampering: %+v, %v; want problems", full.Problems, err)
	}
	// The log's problem comes first, then the failed chains' in listing
	// order, whichever chain's workers finished first.
	listed, err := e.l.Sessions(ctx(), ledger.SessionFilter{})
	if err != nil || len(listed) != 2 {
		t.Fatalf("sessions = %d, %v", len(listed), err)
	}
	if len(full.Problems) != 3 || !strings.Contains(full.Problems[0], "stored log hash") || len(full.Failed) != 2 ||
		full.Failed[0].SessionID != listed[0].ID || full.Failed[1].SessionID != listed[1].ID {
		t.Fatalf("full verification after tampering: %q; want the log problem, then sessions %s and %s", full.Problems, listed[0].ID, listed[1].ID)
	}
	for _, r := range full.Failed {
		if r.SessionID == s.ID && r.Signatures.Seq != int64(len(evs)-1) {
			t.Fatalf("signatures check of %s = %+v; want a failure at %d", s.ID, r.Signatures, len(evs)-1)
		}
	}
}

func testOperationalTables(t *testing.T, h Harness) {
	e := open(t, h, nil)
	hash := strings.Repeat("0f", 32)
	if err := e.l.PutToken(ctx(), ledger.Token{Hash: hash, Role: "admin", Label: "generated (this run)"}); err != nil {
		t.Fatal(err)
	}
	if err := e.l.PutToken(ctx(), ledger.Token{Hash: "not-hex", Role: "admin"}); err == nil {
		t.Fatal("a token row without a SHA-256 hash was stored")
	}
	tok, err := e.l.Token(ctx(), hash)
	if err != nil || tok.Role != "admin" || tok.CreatedAt.IsZero() {
		t.Fatalf("Token = %+v, %v", tok, err)
	}
	if err := e.l.PutToken(ctx(), ledger.Token{Hash: hash, Role: "auditor"}); err != nil {
		t.Fatal(err)
	}
	if tok, _ := e.l.Token(ctx(), hash); tok.Role != "auditor" || tok.Scope != ledger.ScopeAll {
		t.Fatalf("role after replace %q, scope %q; want auditor, all", tok.Role, tok.Scope)
	}
	// Token scopes and session creators (issue 13 item 7) round-trip.
	scoped := strings.Repeat("2b", 32)
	if err := e.l.PutToken(ctx(), ledger.Token{Hash: scoped, Role: "agent", Scope: ledger.ScopeOwnSessions}); err != nil {
		t.Fatal(err)
	}
	if tok, _ := e.l.Token(ctx(), scoped); tok.Scope != ledger.ScopeOwnSessions {
		t.Fatalf("scope %q; want own_sessions", tok.Scope)
	}
	e.l.DeleteToken(ctx(), scoped)
	cs, err := e.l.CreateSession(ctx(), ledger.SessionSpec{Goal: "created by a token", CreatedBy: scoped})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := e.l.Session(ctx(), cs.ID); got.CreatedBy != scoped {
		t.Fatalf("CreatedBy %q; want %q", got.CreatedBy, scoped)
	}
	if toks, _ := e.l.Tokens(ctx()); len(toks) != 1 {
		t.Fatalf("%d tokens; want 1", len(toks))
	}
	if err := e.l.DeleteToken(ctx(), hash); err != nil {
		t.Fatal(err)
	}
	if err := e.l.DeleteToken(ctx(), hash); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("second delete: %v; want ErrNotFound", err)
	}
	e.l.PutToken(ctx(), ledger.Token{Hash: strings.Repeat("1a", 32), Role: "admin", Label: "generated (this run)"})
	if n, err := e.l.DeleteTokensByLabel(ctx(), "generated (this run)"); err != nil || n != 1 {
		t.Fatalf("DeleteTokensByLabel = %d, %v", n, err)
	}

	w, err := e.l.CreateWebhook(ctx(), ledger.Webhook{Label: "Splunk", URL: "https://splunk.example.com/x", SIEMFormat: "cef", FilterKinds: []string{"guard_denial"}, Enabled: true, BearerToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	var enc []byte
	e.l.Backend().View(ctx(), func(tx ledger.ReadTx) error {
		_, enc, err = tx.Webhook(ctx(), w.ID)
		return err
	})
	if len(enc) == 0 || strings.Contains(string(enc), "s3cret") {
		t.Fatal("the bearer token is stored in clear")
	}
	got, err := e.l.Webhook(ctx(), w.ID)
	if err != nil || got.BearerToken != "s3cret" || got.FilterKinds[0] != "guard_denial" || !got.Enabled {
		t.Fatalf("Webhook = %+v, %v", got, err)
	}
	if got, err := e.l.SetWebhookEnabled(ctx(), w.ID, false); err != nil || got.Enabled {
		t.Fatalf("disable = %+v, %v", got, err)
	}
	if ws, _ := e.l.Webhooks(ctx()); len(ws) != 1 {
		t.Fatalf("%d webhooks; want 1", len(ws))
	}
	if err := e.l.DeleteWebhook(ctx(), w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.Webhook(ctx(), w.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("deleted webhook: %v", err)
	}

	s := newSession(t, e.l, "approvals")
	g1, g2 := uuid.New(), uuid.New()
	e.l.OpenApproval(ctx(), ledger.Approval{GateID: g1, SessionID: s.ID, ActionName: "run_command", ActionParamsSummary: `{"command":"rm"}`})
	e.clock.Advance(1000)
	e.l.OpenApproval(ctx(), ledger.Approval{GateID: g2, SessionID: s.ID, ActionName: "http_get", ActionParamsSummary: `{}`})
	p, err := e.l.PendingApproval(ctx(), s.ID)
	if err != nil || p.GateID != g1 {
		t.Fatalf("pending = %+v, %v; want the oldest gate", p, err)
	}
	if err := e.l.DecideApproval(ctx(), g1, true, "operator:api:ci"); err != nil {
		t.Fatal(err)
	}
	if err := e.l.DecideApproval(ctx(), g1, false, "again"); !errors.Is(err, ledger.ErrAlreadyDecided) {
		t.Fatalf("second decision: %v; want ErrAlreadyDecided", err)
	}
	if err := e.l.DecideApproval(ctx(), uuid.New(), true, ""); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown gate: %v; want ErrNotFound", err)
	}
	if a, _ := e.l.Approval(ctx(), g1); !a.Approved || a.DecidedAt.IsZero() || a.Reason != "operator:api:ci" {
		t.Fatalf("decided gate = %+v", a)
	}
	if p, _ := e.l.PendingApproval(ctx(), s.ID); p.GateID != g2 {
		t.Fatalf("pending after decision = %s; want %s", p.GateID, g2)
	}
}

// testStartupTail: the startup check verifies the signatures of a running
// session's tip and of its key rotations only (ledger/startup.go); every
// rewrite of the tail that a holder of no key of the chain can make is still
// caught, through the hashes that link the tail to the tip. A signature
// damaged on its own, the event's bytes intact, is left to the full
// verification.
func testStartupTail(t *testing.T, h Harness) {
	relink := func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event, from int, payload []byte) {
		prev := evs[from-1].Hash
		for i := from; i < len(evs); i++ {
			ev := evs[i]
			p := ev.Payload
			if i == from {
				p = payload
			}
			hash := ledger.EventHash(prev, id, ev.Seq, ev.CreatedMicros, ev.Type, p)
			e.db.Tamper(t, `UPDATE events SET payload = ?, prev_hash = ?, hash = ? WHERE session_id = ? AND seq = ?`,
				p, prev[:], hash[:], id[:], int64(ev.Seq))
			prev = hash
		}
	}
	tests := []struct {
		name   string
		tamper func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event)
		want   string // the startup problem; "" = startup passes
	}{
		{"payload rewritten before the tip, chain re-linked", func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			relink(t, e, id, evs, 7, []byte(`{"content":"forged","type":"observation"}`))
		}, "event 8: signature does not verify"},
		{"payload rewritten before a rotation, chain re-linked", func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			relink(t, e, id, evs, 3, []byte(`{"content":"forged","type":"observation"}`))
		}, "event 6: signature does not verify"},
		{"payload rewritten, hash kept", func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			e.db.Tamper(t, `UPDATE events SET payload = ? WHERE session_id = ? AND seq = 4`, []byte(`{"content":"forged","type":"observation"}`), id[:])
		}, "event 4: stored hash does not match its bytes"},
		{"rotation to an attacker's key, tail re-signed", func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			// The rotation keeps the id of the key it replaces, as if that
			// key had signed it: only its signature tells.
			rotateToAttacker(t, e, id, evs, true)
		}, "event 6: signature does not verify"},
		{"tip signature damaged", func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			sig := append([]byte{}, evs[8].Signature...)
			sig[3] ^= 1
			e.db.Tamper(t, `UPDATE events SET signature = ? WHERE session_id = ? AND seq = 8`, sig, id[:])
		}, "event 8: signature does not verify"},
		{"a signature damaged alone before the tip", func(t *testing.T, e *env, id uuid.UUID, evs []ledger.Event) {
			sig := append([]byte{}, evs[4].Signature...)
			sig[3] ^= 1
			e.db.Tamper(t, `UPDATE events SET signature = ? WHERE session_id = ? AND seq = 4`, sig, id[:])
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, id, evs := tamperSetup(t, h, false)
			tc.tamper(t, e, id, evs)
			rep, err := e.l.VerifyStartup(ctx())
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if !rep.OK() {
					t.Fatalf("startup problems %q; want none (the bytes are intact)", rep.Problems)
				}
			} else if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "session "+id.String()+": "+tc.want) {
				t.Fatalf("startup problems %q; want one: %q", rep.Problems, tc.want)
			}
			// The full verification catches every one of them.
			if r, err := e.l.VerifySession(ctx(), id); err != nil || r.OK() {
				t.Fatalf("VerifySession: ok=%v, %v; want a failure", r.OK(), err)
			}
		})
	}
}

// testStartupOwned: VerifyStartupOwned checks the log's tail, the instance
// chain and the running sessions of its own owner id; a tampered session
// of another owner is VerifyStartup's to find, and its owner's.
func testStartupOwned(t *testing.T, h Harness) {
	e := open(t, h, func(o *ledger.Options) { o.OwnerID = "owner-a" })
	mine := newSession(t, e.l, "mine")
	appendN(t, e.l, mine.ID, 3)
	b := e.openLedger(func(o *ledger.Options) { o.OwnerID = "owner-b" })
	theirs := newSession(t, b, "theirs")
	appendN(t, b, theirs.ID, 3)
	rep, err := e.l.VerifyStartupOwned(ctx())
	if err != nil || !rep.OK() || rep.SessionsChecked != 2 {
		t.Fatalf("clean ledger: %+v, %v; want OK over the instance chain and one session", rep, err)
	}
	evs, _ := b.Events(ctx(), theirs.ID, 0, 0)
	sig := append([]byte{}, evs[len(evs)-1].Signature...)
	sig[0] ^= 1
	e.db.Tamper(t, `UPDATE events SET signature = ? WHERE session_id = ? AND seq = ?`, sig, theirs.ID[:], int64(len(evs)-1))
	if rep, err := e.l.VerifyStartupOwned(ctx()); err != nil || !rep.OK() {
		t.Fatalf("another owner's session tampered: %+v, %v; want OK", rep.Problems, err)
	}
	for name, verify := range map[string]func(context.Context) (ledger.StartupReport, error){
		"VerifyStartup":                  e.l.VerifyStartup,
		"the owner's VerifyStartupOwned": b.VerifyStartupOwned,
	} {
		rep, err := verify(ctx())
		if err != nil || rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), theirs.ID.String()) {
			t.Fatalf("%s after tampering: %+v, %v; want the tampered session named", name, rep.Problems, err)
		}
	}
}
