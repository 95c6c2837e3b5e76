package ledgertest

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

func testKeyRotation(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "rotate")
	appendN(t, e.l, s.ID, 2)
	rot, err := e.l.RotateKey(ctx(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	after := appendN(t, e.l, s.ID, 2)
	var rp struct {
		New   string `json:"new_public_key"`
		Index int    `json:"rotation_index"`
	}
	if err := json.Unmarshal(rot.Payload, &rp); err != nil || rp.Index != 1 {
		t.Fatalf("rotation payload %s", rot.Payload)
	}
	// The rotation is signed by the old key; the next event by the new one.
	if !rot.PublicKey.Equal(s.PublicKey) {
		t.Fatal("key_rotation not signed by the previous key")
	}
	if hex.EncodeToString(after[0].PublicKey) != rp.New || after[0].PublicKey.Equal(s.PublicKey) {
		t.Fatal("event after rotation not signed by the new key")
	}
	rot2, err := e.l.RotateKey(ctx(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(rot2.Payload, &rp)
	if rp.Index != 2 {
		t.Fatalf("second rotation index %d; want 2", rp.Index)
	}
	appendN(t, e.l, s.ID, 1)
	mustVerify(t, e.l, s.ID)
	// Another process continues with the newest key.
	l2 := e.openLedger(nil)
	ev, err := l2.Append(ctx(), s.ID, ledger.TypeObservation, map[string]any{"content": "from another process"})
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(ev.PublicKey) != rp.New {
		t.Fatal("second process did not sign with the newest key")
	}
	mustVerify(t, l2, s.ID)
}

func testResume(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "resume")
	appendN(t, e.l, s.ID, 3)
	// A second process (same data dir issuer key) interleaves with the
	// first: each sees the other's appends through the database.
	l2 := e.openLedger(nil)
	for i := range 4 {
		l := e.l
		if i%2 == 1 {
			l = l2
		}
		if _, err := l.Append(ctx(), s.ID, ledger.TypeThought, map[string]any{"content": "turn"}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if _, err := l2.RotateKey(ctx(), s.ID); err != nil {
		t.Fatal(err)
	}
	// The first process must notice the rotation made elsewhere.
	if _, err := e.l.Append(ctx(), s.ID, ledger.TypeThought, map[string]any{"content": "after remote rotation"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l2.Seal(ctx(), s.ID, "l2"); err != nil {
		t.Fatal(err)
	}
	r := mustVerify(t, e.l, s.ID)
	if len(r.IssuerSigned) != 0 {
		t.Fatalf("issuer-signed %v; a process with the key signs with it", r.IssuerSigned)
	}
}

func testPassphraseAndIssuer(t *testing.T, h Harness) {
	e := open(t, h, func(o *ledger.Options) { o.Passphrase = "correct horse" })
	s := newSession(t, e.l, "passphrase")
	appendN(t, e.l, s.ID, 2)
	// Same passphrase in another process: continues the session.
	same := e.openLedger(func(o *ledger.Options) { o.Passphrase = "correct horse" })
	if _, err := same.Append(ctx(), s.ID, ledger.TypeThought, map[string]any{"content": "same passphrase"}); err != nil {
		t.Fatal(err)
	}
	// A wrong passphrase is refused at open.
	if _, err := ledger.New(ctx(), e.db.Backend(t), ledger.Options{IssuerKey: e.issuer, Passphrase: "wrong", CheckpointInterval: -1}); !errors.Is(err, ledger.ErrPassphrase) {
		t.Fatalf("wrong passphrase: %v; want ErrPassphrase", err)
	}
	// Another issuer key is refused at open.
	other, _ := ledger.GenerateSigningKey(nil)
	if _, err := ledger.New(ctx(), e.db.Backend(t), ledger.Options{IssuerKey: other, CheckpointInterval: -1}); !errors.Is(err, ledger.ErrIssuerMismatch) {
		t.Fatalf("other issuer key: %v; want ErrIssuerMismatch", err)
	}
	// Without the passphrase a process is refused at open: it would write
	// new session keys protected only by the issuer key (issue 23 item 5).
	if _, err := ledger.New(ctx(), e.db.Backend(t), ledger.Options{IssuerKey: e.issuer, CheckpointInterval: -1}); !errors.Is(err, ledger.ErrPassphraseRequired) {
		t.Fatalf("open without the passphrase: %v; want ErrPassphraseRequired", err)
	}
	// New keys are written under the Argon2id KEK; the session still
	// verifies and continues with the passphrase.
	if _, err := same.RotateKey(ctx(), s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.Seal(ctx(), s.ID, "passphrase"); err != nil {
		t.Fatal(err)
	}
	r := mustVerify(t, e.l, s.ID)
	if len(r.IssuerSigned) != 0 {
		t.Fatalf("issuer-signed %v; want none", r.IssuerSigned)
	}
}

func testCrashRecovery(t *testing.T, h Harness) {
	e := open(t, h, nil)
	live := newSession(t, e.l, "live")
	dead := e.openLedger(nil) // a process that will "die"
	s, err := dead.CreateSession(ctx(), ledger.SessionSpec{Goal: "crashes"})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, dead, s.ID, 2)
	// While the lease is live, nobody recovers it.
	rec := e.openLedger(nil)
	if got, err := rec.Recover(ctx()); err != nil || len(got) != 0 {
		t.Fatalf("Recover with live leases = %v, %v; want nothing", got, err)
	}
	// The dead process stops renewing; 31 s later its lease has lapsed.
	// (The live session belongs to e.l, whose lease also lapses on this
	// fake clock, so renew it as its owner would.)
	e.clock.Advance(31 * time.Second)
	if err := e.l.Backend().RenewLeases(ctx(), e.l.OwnerID(), e.clock.Now().Add(30*time.Second).UnixMicro(), 0); err != nil {
		t.Fatal(err)
	}
	got, err := rec.Recover(ctx())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []uuid.UUID{s.ID}) {
		t.Fatalf("recovered %v; want only %s", got, s.ID)
	}
	rs, _ := rec.Session(ctx(), s.ID)
	if rs.Status != ledger.StatusFailed || rs.FinishedAt.IsZero() {
		t.Fatalf("recovered session status %s; want failed with a finish time", rs.Status)
	}
	ls, _ := rec.Session(ctx(), live.ID)
	if ls.Status != ledger.StatusRunning {
		t.Fatalf("live session status %s; a live lease must not be recovered", ls.Status)
	}
	evs, _ := rec.Events(ctx(), s.ID, 0, 0)
	last := evs[len(evs)-1]
	if last.Type != ledger.TypeRecovery || last.Signer != ledger.SignerIssuer {
		t.Fatalf("last event %s by %s; want an issuer-signed recovery", last.Type, last.Signer)
	}
	var rp map[string]any
	json.Unmarshal(last.Payload, &rp)
	if rp["previous_owner"] != dead.OwnerID() || rp["last_seq"] != float64(3) {
		t.Fatalf("recovery payload %s", last.Payload)
	}
	mustVerify(t, rec, s.ID)
	// Recovering twice does nothing more.
	if again, _ := rec.Recover(ctx()); len(again) != 0 {
		t.Fatalf("second Recover = %v", again)
	}
}

func testGoalAnchoringOnAppend(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "the real goal")
	appendN(t, e.l, s.ID, 1)
	// The trigger refuses this edit; with it dropped, the append path
	// must still notice.
	e.db.Tamper(t, `UPDATE sessions SET goal = ?, goal_hash = ? WHERE id = ?`, "a different goal", ledger.GoalHash("a different goal"), s.ID[:])
	_, err := e.l.Append(ctx(), s.ID, ledger.TypeObservation, map[string]any{"content": "x"})
	if !errors.Is(err, ledger.ErrGoalMismatch) {
		t.Fatalf("append after goal change: %v; want ErrGoalMismatch", err)
	}
	got, _ := e.l.Session(ctx(), s.ID)
	if got.Status != ledger.StatusAborted {
		t.Fatalf("status %s; a goal mismatch aborts the session", got.Status)
	}
	evs, _ := e.l.Events(ctx(), s.ID, 0, 0)
	if last := evs[len(evs)-1]; last.Type != ledger.TypeSessionHalted {
		t.Fatalf("last event %s; want session_halted", last.Type)
	}
	// A fresh process (no cached goal) reaches the same verdict from seq 0.
	l2 := e.openLedger(nil)
	if _, err := l2.Append(ctx(), s.ID, ledger.TypeObservation, map[string]any{"content": "y"}); !errors.Is(err, ledger.ErrGoalMismatch) {
		t.Fatalf("append from another process: %v; want ErrGoalMismatch", err)
	}
	r, _ := e.l.VerifySession(ctx(), s.ID)
	if r.Goal.OK || r.Goal.Seq != 0 {
		t.Fatalf("goal check = %+v; want a failure at seq 0", r.Goal)
	}
}

func testCheckpointCadence(t *testing.T, h Harness) {
	e := open(t, h, func(o *ledger.Options) { o.CheckpointEvents = 10 })
	first, _ := e.l.LatestCheckpoint(ctx())
	// No new events: no new checkpoint, however often asked.
	for range 3 {
		cp, err := e.l.Checkpoint(ctx())
		if err != nil || cp.TreeSize != first.TreeSize {
			t.Fatalf("idle Checkpoint = size %d, %v; want still %d", cp.TreeSize, err, first.TreeSize)
		}
	}
	s := newSession(t, e.l, "cadence")
	appendN(t, e.l, s.ID, 30)
	var cps []ledger.Checkpoint
	for size := int64(1); size < 64; size++ {
		if cp, err := e.l.CheckpointBySize(ctx(), size); err == nil {
			cps = append(cps, cp)
		}
	}
	if len(cps) < 3 {
		t.Fatalf("%d checkpoints after 32 events with ECTO_CHECKPOINT_EVENTS=10; want at least 3", len(cps))
	}
	for i := 1; i < len(cps); i++ {
		// Each checkpoint follows at most 10 non-checkpoint leaves after
		// the previous one's own event.
		if gap := cps[i].TreeSize - cps[i-1].TreeSize - 1; gap < 10 || gap > 10+1 {
			t.Errorf("checkpoint %d follows %d after %d leaves", cps[i].TreeSize, cps[i-1].TreeSize, gap)
		}
	}
	// Periodic checkpoints: with a short interval one appears by itself.
	e2 := open(t, h, func(o *ledger.Options) { o.CheckpointInterval = 20 * time.Millisecond })
	s2 := newSession(t, e2.l, "timer")
	deadline := time.Now().Add(5 * time.Second)
	for {
		cp, _ := e2.l.LatestCheckpoint(ctx())
		if cp.TreeSize >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no periodic checkpoint covering session %s", s2.ID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testProofs(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "proofs")
	appendN(t, e.l, s.ID, 9)
	if _, err := e.l.InclusionProof(ctx(), s.ID, 5, 0); !errors.Is(err, ledger.ErrNotCovered) {
		t.Fatalf("proof before a checkpoint: %v; want ErrNotCovered", err)
	}
	old, err := e.l.Checkpoint(ctx())
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, e.l, s.ID, 13)
	nw, err := e.l.Checkpoint(ctx())
	if err != nil || nw.TreeSize <= old.TreeSize {
		t.Fatalf("second checkpoint %d after %d: %v", nw.TreeSize, old.TreeSize, err)
	}
	for seq := uint64(0); seq < 24; seq++ {
		p, err := e.l.InclusionProof(ctx(), s.ID, seq, 0)
		if err != nil {
			t.Fatalf("proof of %d: %v", seq, err)
		}
		if err := ledger.VerifyInclusion(p.Path, p.TreeSize, p.Root, p.LogIndex, p.EventHash); err != nil {
			t.Fatalf("proof of %d does not verify: %v", seq, err)
		}
		if p.LeafHash != ledger.LeafHash(p.EventHash) || p.Root != nw.Root {
			t.Fatal("proof leaf or root wrong")
		}
		// A wrong event hash must not verify.
		bad := p.EventHash
		bad[0] ^= 1
		if ledger.VerifyInclusion(p.Path, p.TreeSize, p.Root, p.LogIndex, bad) == nil {
			t.Fatal("inclusion proof verified a different event")
		}
	}
	// Against the older recorded checkpoint.
	p, err := e.l.InclusionProof(ctx(), s.ID, 3, old.TreeSize)
	if err != nil || ledger.VerifyInclusion(p.Path, old.TreeSize, old.Root, p.LogIndex, p.EventHash) != nil {
		t.Fatalf("proof against the old checkpoint: %v", err)
	}
	if _, err := e.l.InclusionProof(ctx(), s.ID, 3, old.TreeSize+1); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("proof against an unrecorded size: %v; want ErrNotFound", err)
	}
	cp, err := e.l.ConsistencyProof(ctx(), old.TreeSize, nw.TreeSize)
	if err != nil {
		t.Fatal(err)
	}
	if cp.OldRoot != old.Root || cp.NewRoot != nw.Root {
		t.Fatal("consistency proof roots differ from the checkpoints")
	}
	if err := ledger.VerifyConsistency(cp.Path, old.TreeSize, old.Root, nw.TreeSize, nw.Root); err != nil {
		t.Fatalf("consistency proof: %v", err)
	}
	wrong := old.Root
	wrong[3] ^= 1
	if ledger.VerifyConsistency(cp.Path, old.TreeSize, wrong, nw.TreeSize, nw.Root) == nil {
		t.Fatal("consistency proof verified a rewritten old tree")
	}
	if _, err := e.l.ConsistencyProof(ctx(), nw.TreeSize, old.TreeSize); err == nil {
		t.Fatal("consistency proof with old > new succeeded")
	}
}

func testReopen(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "reopen")
	appendN(t, e.l, s.ID, 2)
	// Opening again on the same database applies no migration twice and
	// writes no second instance genesis.
	l2 := e.openLedger(nil)
	evs, err := l2.Events(ctx(), ledger.InstanceSessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == ledger.TypeGenesis {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d instance genesis events after reopening; want 1", n)
	}
	mustVerify(t, l2, s.ID)
}
