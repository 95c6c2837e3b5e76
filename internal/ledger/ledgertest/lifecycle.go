package ledgertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

func testInstanceSession(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s, err := e.l.Session(ctx(), ledger.InstanceSessionID)
	if err != nil {
		t.Fatalf("instance session: %v", err)
	}
	if s.ID != uuid.Nil || !s.PublicKey.Equal(e.issuer.Public()) {
		t.Fatalf("instance session id %s key %x; want nil UUID and the issuer key", s.ID, s.PublicKey)
	}
	evs, err := e.l.Events(ctx(), ledger.InstanceSessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Instance genesis, then the first checkpoint's event
	// (docs/design/api.md#server-config).
	if len(evs) != 2 || evs[0].Type != ledger.TypeGenesis || evs[1].Type != ledger.TypeCheckpoint {
		t.Fatalf("instance chain = %v; want genesis, checkpoint", types(evs))
	}
	if evs[0].LogIndex != 0 || evs[0].ID() != 1 {
		t.Fatalf("instance genesis log index %d; want 0 (event id 1)", evs[0].LogIndex)
	}
	cp, err := e.l.LatestCheckpoint(ctx())
	if err != nil || cp.TreeSize != 1 || cp.EventLogIndex != 1 {
		t.Fatalf("first checkpoint = size %d event %d, %v; want size 1 recorded by event 1", cp.TreeSize, cp.EventLogIndex, err)
	}
	if err := ledger.VerifyCheckpoint(&cp, e.l.Origin(), e.issuer.Public()); err != nil {
		t.Fatalf("first checkpoint: %v", err)
	}
	if !strings.HasPrefix(string(cp.Note), e.l.Origin()+"\n1\n") {
		t.Fatalf("checkpoint note %q does not start with origin and size", cp.Note)
	}
	list, err := e.l.Sessions(ctx(), ledger.SessionFilter{})
	if err != nil || len(list) != 0 {
		t.Fatalf("Sessions = %d, %v; the instance session must not be listed", len(list), err)
	}
	mustVerify(t, e.l, ledger.InstanceSessionID)
	// Instance-chain events such as admin_change are appended like any
	// other and signed by the issuer key.
	ev, err := e.l.Append(ctx(), ledger.InstanceSessionID, ledger.TypeAdminChange, map[string]any{"target": "config", "action": "update", "name": nil, "actor": "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if !ev.PublicKey.Equal(e.issuer.Public()) || ev.Signer != ledger.SignerSession {
		t.Fatalf("admin_change signed by %x (%s); want the issuer key as the chain key", ev.PublicKey, ev.Signer)
	}
	if _, err := e.l.Seal(ctx(), ledger.InstanceSessionID, "x"); err == nil {
		t.Fatal("sealing the instance session succeeded")
	}
}

func types(evs []ledger.Event) []string {
	out := make([]string, len(evs))
	for i := range evs {
		out[i] = evs[i].Type
	}
	return out
}

func newSession(t testing.TB, l *ledger.Ledger, goal string) *ledger.Session {
	t.Helper()
	s, err := l.CreateSession(ctx(), ledger.SessionSpec{
		Goal: goal, PolicyHash: strings.Repeat("ab", 32), TripwireHash: "tw", GuardRequired: true,
		LLMBackend: "mock", LLMModel: "mock-v1", SandboxTier: "native", AgentLoop: true,
	})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return s
}

func appendN(t testing.TB, l *ledger.Ledger, id uuid.UUID, n int) []ledger.Event {
	t.Helper()
	var out []ledger.Event
	for i := range n {
		ev, err := l.Append(ctx(), id, ledger.TypeObservation, map[string]any{"content": fmt.Sprintf("output %d", i), "step": i})
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		out = append(out, ev)
	}
	return out
}

func testLifecycle(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "  audit the repository \n")
	if s.Goal != "audit the repository" || s.GoalHash != ledger.GoalHash("audit the repository") {
		t.Fatalf("goal %q hash %s; want the trimmed goal and its SHA-256", s.Goal, s.GoalHash)
	}
	if s.ID.Version() != 7 {
		t.Fatalf("session id version %d; want a UUIDv7", s.ID.Version())
	}
	if s.Status != ledger.StatusRunning || s.Sealed() || s.EventCount != 2 || s.OwnerID != e.l.OwnerID() {
		t.Fatalf("new session = %+v; want running, unsealed, 2 events, owned by this process", s)
	}
	if !strings.HasPrefix(s.DID, "did:key:z6Mk") {
		t.Fatalf("did %q; want a did:key of an Ed25519 key (z6Mk…)", s.DID)
	}
	evs, err := e.l.Events(ctx(), s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := types(evs); len(got) != 2 || got[0] != "genesis" || got[1] != "prompt_input" {
		t.Fatalf("first events %v; want genesis, prompt_input", got)
	}
	if evs[0].PrevHash != ledger.GenesisPrevHash(s.ID) || evs[1].PrevHash != evs[0].Hash {
		t.Fatal("genesis prev_hash or the link of sequence 1 is wrong")
	}
	var g map[string]any
	if err := json.Unmarshal(evs[0].Payload, &g); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"goal", "goal_hash", "policy_hash", "tripwire_hash", "guard_required", "llm_backend", "llm_model", "sandbox_tier", "session_public_key", "message", "type"} {
		if _, ok := g[k]; !ok {
			t.Errorf("genesis payload lacks %q", k)
		}
	}
	if !bytes.Equal(evs[1].Payload, []byte(`{"content":"audit the repository","event_origin":"ironvise","type":"prompt_input"}`)) {
		t.Fatalf("prompt_input payload %s", evs[1].Payload)
	}
	appended := appendN(t, e.l, s.ID, 5)
	if appended[4].Seq != 6 {
		t.Fatalf("fifth append got seq %d; want 6", appended[4].Seq)
	}
	r := mustVerify(t, e.l, s.ID)
	if r.Uncovered == 0 {
		t.Fatal("events appended after the last checkpoint are reported as covered")
	}
	if err := e.l.EndSession(ctx(), s.ID, ledger.StatusAborted); err != nil {
		t.Fatal(err)
	}
	if err := e.l.EndSession(ctx(), s.ID, ledger.StatusCompleted); !errors.Is(err, ledger.ErrNotRunning) {
		t.Fatalf("ending an ended session: %v; want ErrNotRunning", err)
	}
	// Appending after the end is allowed until the seal (the VC event).
	if _, err := e.l.Append(ctx(), s.ID, ledger.TypeVerifiableCredential, map[string]any{"vc_jwt": "x.y.z"}); err != nil {
		t.Fatal(err)
	}
	sr, err := e.l.Seal(ctx(), s.ID, "cafebabecafebabe")
	if err != nil {
		t.Fatal(err)
	}
	if sr.AlreadySealed || sr.Status != ledger.StatusAborted || sr.Event.Type != ledger.TypeSessionSealed || sr.Checkpoint.TreeSize != sr.Event.LogIndex+1 {
		t.Fatalf("seal = %+v; want a new seal keeping status aborted, with a checkpoint covering it", sr)
	}
	var sp map[string]any
	json.Unmarshal(sr.Event.Payload, &sp)
	if sp["tip_sequence"] != float64(7) || sp["event_count"] != float64(8) || sp["actor"] != "cafebabecafebabe" || sp["checkpoint_tree_size"] != float64(sr.Checkpoint.TreeSize) {
		t.Fatalf("seal payload %s", sr.Event.Payload)
	}
	again, err := e.l.Seal(ctx(), s.ID, "other")
	if err != nil || !again.AlreadySealed || again.Event.Hash != sr.Event.Hash {
		t.Fatalf("second seal = %+v, %v; want idempotent, same seal event", again, err)
	}
	if _, err := e.l.Append(ctx(), s.ID, ledger.TypeObservation, map[string]any{"content": "late"}); !errors.Is(err, ledger.ErrSealed) {
		t.Fatalf("append after seal: %v; want ErrSealed", err)
	}
	if _, err := e.l.RotateKey(ctx(), s.ID); !errors.Is(err, ledger.ErrSealed) {
		t.Fatalf("rotate after seal: %v; want ErrSealed", err)
	}
	got, err := e.l.Session(ctx(), s.ID)
	if err != nil || !got.Sealed() || got.Status != ledger.StatusAborted || got.FinishedAt.IsZero() || got.EventCount != 9 {
		t.Fatalf("sealed session = %+v, %v", got, err)
	}
	r = mustVerify(t, e.l, s.ID)
	if !r.Sealed || r.Uncovered != 0 || r.CheckedTreeSize != sr.Checkpoint.TreeSize {
		t.Fatalf("report after seal: sealed=%v uncovered=%d checked=%d", r.Sealed, r.Uncovered, r.CheckedTreeSize)
	}
	// A running session sealed directly becomes completed.
	s2 := newSession(t, e.l, "second")
	sr2, err := e.l.Seal(ctx(), s2.ID, "a")
	if err != nil || sr2.Status != ledger.StatusCompleted {
		t.Fatalf("seal of a running session = %v, %v; want completed", sr2.Status, err)
	}
	if _, err := e.l.Append(ctx(), uuid.New(), ledger.TypeObservation, nil); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("append to unknown session: %v; want ErrNotFound", err)
	}
	if _, err := e.l.VerifySession(ctx(), uuid.New()); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("verify unknown session: %v; want ErrNotFound", err)
	}
	for _, bad := range []string{"", "   ", "a\x00b", "bad \xff utf8"} {
		if _, err := e.l.CreateSession(ctx(), ledger.SessionSpec{Goal: bad}); !errors.Is(err, ledger.ErrInvalidPayload) {
			t.Errorf("CreateSession(%q): %v; want ErrInvalidPayload", bad, err)
		}
	}
}

func testCanonicalPayload(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "canonical")
	tests := []struct {
		name    string
		typ     string
		payload any
		want    string
		err     error
		// client appends through AppendClient instead of Append.
		client bool
	}{
		{"sorted keys and type added", "observation", map[string]any{"z": 1, "a": "x", "m": []any{true, nil, 1.5}}, `{"a":"x","event_origin":"ironvise","m":[true,null,1.5],"type":"observation","z":1}`, nil, false},
		{"raw JSON canonicalised", "thought", []byte(" { \"content\" : \"\\u00e9\\u003c\" , \"n\": 1E2 } "), `{"content":"é<","event_origin":"ironvise","n":100,"type":"thought"}`, nil, false},
		{"matching type kept", "observation", map[string]any{"type": "observation"}, `{"event_origin":"ironvise","type":"observation"}`, nil, false},
		{"nil payload", "observation", nil, `{"event_origin":"ironvise","type":"observation"}`, nil, false},
		// The origin is in the signed bytes, and a client cannot choose it.
		{"client origin stamped", "observation", map[string]any{"content": "x"}, `{"content":"x","event_origin":"client","type":"observation"}`, nil, true},
		{"client claims ironvise", "observation", map[string]any{"content": "x", "event_origin": "ironvise"}, "", ledger.ErrInvalidPayload, true},
		{"ironvise payload claims client", "observation", map[string]any{"event_origin": "client"}, "", ledger.ErrInvalidPayload, false},
		{"conflicting type", "observation", map[string]any{"type": "action"}, "", ledger.ErrInvalidPayload, false},
		{"not an object", "observation", []int{1}, "", ledger.ErrInvalidPayload, false},
		{"duplicate keys", "observation", []byte(`{"a":1,"a":2}`), "", ledger.ErrInvalidPayload, false},
		{"reserved genesis", "genesis", nil, "", ledger.ErrReservedType, false},
		{"reserved seal", "session_sealed", nil, "", ledger.ErrReservedType, false},
		{"reserved checkpoint", "checkpoint", nil, "", ledger.ErrReservedType, false},
		{"reserved rotation", "key_rotation", nil, "", ledger.ErrReservedType, false},
		{"reserved recovery", "recovery", nil, "", ledger.ErrReservedType, false},
		{"bad type name", "Observation!", nil, "", ledger.ErrInvalidType, false},
		{"empty type name", "", nil, "", ledger.ErrInvalidType, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			add := e.l.Append
			if tc.client {
				add = e.l.AppendClient
			}
			ev, err := add(ctx(), s.ID, tc.typ, tc.payload)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Append: %v; want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(ev.Payload) != tc.want {
				t.Fatalf("stored payload %s; want %s", ev.Payload, tc.want)
			}
			// Stored bytes come back byte for byte.
			back, err := e.l.Events(ctx(), s.ID, ev.Seq, 1)
			if err != nil || len(back) != 1 || !bytes.Equal(back[0].Payload, ev.Payload) || back[0].Hash != ev.Hash {
				t.Fatalf("read back %v, %v", back, err)
			}
		})
	}
	// A batch is atomic: one refused record refuses all.
	before, _ := e.l.Session(ctx(), s.ID)
	if _, err := e.l.AppendBatch(ctx(), s.ID, []ledger.Record{{Type: "thought", Payload: nil}, {Type: "genesis", Payload: nil}}); !errors.Is(err, ledger.ErrReservedType) {
		t.Fatalf("batch with a reserved type: %v", err)
	}
	evs, err := e.l.AppendBatch(ctx(), s.ID, []ledger.Record{
		{Type: ledger.TypeIntentProposed, Payload: map[string]any{"step": 1}},
		{Type: ledger.TypeCheckVerdict, Payload: map[string]any{"check": "schema"}},
		{Type: ledger.TypeAction, Payload: map[string]any{"name": "run_command"}},
	})
	if err != nil || len(evs) != 3 {
		t.Fatalf("AppendBatch = %d events, %v", len(evs), err)
	}
	if evs[0].Seq != uint64(before.EventCount) || evs[2].Seq != evs[0].Seq+2 || evs[1].PrevHash != evs[0].Hash {
		t.Fatalf("batch seqs %d..%d after %d events", evs[0].Seq, evs[2].Seq, before.EventCount)
	}
	mustVerify(t, e.l, s.ID)
}

func testListing(t *testing.T, h Harness) {
	e := open(t, h, nil)
	var ids []uuid.UUID
	for i := range 7 {
		s := newSession(t, e.l, fmt.Sprintf("goal %d", i))
		ids = append(ids, s.ID)
		e.clock.Advance(1000)
	}
	if err := e.l.EndSession(ctx(), ids[1], ledger.StatusFailed); err != nil {
		t.Fatal(err)
	}
	all, err := e.l.Sessions(ctx(), ledger.SessionFilter{})
	if err != nil || len(all) != 7 {
		t.Fatalf("Sessions = %d, %v; want 7", len(all), err)
	}
	for i := range all {
		if all[i].ID != ids[6-i] {
			t.Fatalf("listing order: row %d is %s; want newest first", i, all[i].ID)
		}
	}
	p1, _ := e.l.Sessions(ctx(), ledger.SessionFilter{Limit: 3})
	p2, _ := e.l.Sessions(ctx(), ledger.SessionFilter{Limit: 3, Offset: 3})
	if len(p1) != 3 || len(p2) != 3 || p1[2].ID == p2[0].ID {
		t.Fatalf("pages overlap or have the wrong size: %d, %d", len(p1), len(p2))
	}
	st, err := e.l.Stats(ctx())
	if err != nil || st.TotalSessions != 7 || st.Sessions[ledger.StatusFailed] != 1 || st.Sessions[ledger.StatusRunning] != 6 || st.Sessions[ledger.StatusAborted] != 0 {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
	if size, _ := e.l.LogSize(ctx()); st.TotalEvents != size || size < 16 {
		t.Fatalf("TotalEvents %d, log size %d", st.TotalEvents, size)
	}
	if err := e.l.Ping(ctx()); err != nil {
		t.Fatal(err)
	}
	failed, _ := e.l.Sessions(ctx(), ledger.SessionFilter{Status: ledger.StatusFailed})
	if len(failed) != 1 || failed[0].ID != ids[1] {
		t.Fatalf("status filter: %v", failed)
	}
	none, err := e.l.Sessions(ctx(), ledger.SessionFilter{Status: "x' OR '1'='1"})
	if err != nil || len(none) != 0 {
		t.Fatalf("injection-looking status: %d rows, %v; want none", len(none), err)
	}
	// Denial counts of a listing: deny verdicts only, whatever a string
	// value of some payload says.
	for _, p := range []map[string]any{
		{"check": "tripwire", "decision": "deny", "message": "no"},
		{"check": "policy", "decision": "deny", "message": "no"},
		{"check": "schema", "decision": "allow", "message": `"decision":"deny"`},
	} {
		if _, err := e.l.Append(ctx(), ids[3], ledger.TypeCheckVerdict, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.l.Append(ctx(), ids[3], ledger.TypeThought, map[string]any{"decision": "deny"}); err != nil {
		t.Fatal(err)
	}
	counted, err := e.l.Sessions(ctx(), ledger.SessionFilter{WithDenials: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range counted {
		want := int64(0)
		if s.ID == ids[3] {
			want = 2
		}
		if s.Denials != want {
			t.Fatalf("session %s: %d denials listed; want %d", s.ID, s.Denials, want)
		}
	}
}

func testConcurrentSessions(t *testing.T, h Harness) {
	e := open(t, h, nil)
	const sessions, per = 12, 15
	var wg sync.WaitGroup
	ids := make([]uuid.UUID, sessions)
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := e.l.CreateSession(ctx(), ledger.SessionSpec{Goal: fmt.Sprintf("parallel %d", i)})
			if err != nil {
				errs <- err
				return
			}
			ids[i] = s.ID
			for j := range per {
				if _, err := e.l.Append(ctx(), s.ID, ledger.TypeThought, map[string]any{"content": fmt.Sprint(j)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		r := mustVerify(t, e.l, id)
		if r.EventCount != per+2 {
			t.Fatalf("session %s has %d events; want %d", id, r.EventCount, per+2)
		}
	}
	// Log indexes are gap-free across all chains.
	size, _ := e.l.LogSize(ctx())
	evs, err := e.l.EventsByLog(ctx(), 0, 0)
	if err != nil || int64(len(evs)) != size {
		t.Fatalf("log has %d events for size %d, %v", len(evs), size, err)
	}
	for i := range evs {
		if evs[i].LogIndex != int64(i) {
			t.Fatalf("log index %d at position %d: the log has a gap", evs[i].LogIndex, i)
		}
	}
}

func testConcurrentOneSession(t *testing.T, h Harness) {
	e := open(t, h, nil)
	s := newSession(t, e.l, "one session, many writers")
	const writers, per = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for j := range per {
				ev, err := e.l.Append(ctx(), s.ID, ledger.TypeObservation, map[string]any{"content": fmt.Sprintf("w%d-%d", w, j)})
				if err != nil {
					errs <- err
					return
				}
				// One writer's appends keep their order.
				if j > 0 && ev.Seq <= last {
					errs <- fmt.Errorf("writer %d: seq %d after %d", w, ev.Seq, last)
					return
				}
				last = ev.Seq
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	evs, err := e.l.Events(ctx(), s.ID, 0, 0)
	if err != nil || len(evs) != writers*per+2 {
		t.Fatalf("%d events, %v; want %d", len(evs), err, writers*per+2)
	}
	for i := range evs {
		if evs[i].Seq != uint64(i) || (i > 0 && evs[i].PrevHash != evs[i-1].Hash) {
			t.Fatalf("chain not dense and linked at %d", i)
		}
	}
	mustVerify(t, e.l, s.ID)
}
