package ledger

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"
)

// Check is the outcome of one verification check.
type Check struct {
	OK bool `json:"ok"`
	// Seq is the first broken sequence, or -1 when the problem is not
	// tied to one event (or there is none).
	Seq int64 `json:"seq"`
	// Problem says what is wrong; Note adds context when OK.
	Problem string `json:"problem,omitempty"`
	Note    string `json:"note,omitempty"`
}

func pass(note string) Check { return Check{OK: true, Seq: -1, Note: note} }

func fail(seq int64, format string, args ...any) Check {
	return Check{OK: false, Seq: seq, Problem: fmt.Sprintf(format, args...)}
}

// Report is the result of verifying one chain: the five checks of
// docs/design/ledger.md#verification, each reported separately.
type Report struct {
	SessionID  uuid.UUID `json:"session_id"`
	EventCount int       `json:"event_count"`
	TipHash    Hash      `json:"tip_hash"`
	Sealed     bool      `json:"sealed"`
	// CheckedTreeSize is the size of the checkpoint the log check used.
	CheckedTreeSize int64 `json:"checked_tree_size"`
	// Uncovered counts events after that checkpoint (not yet provable).
	Uncovered int `json:"uncovered"`
	// IssuerSigned lists the sequences signed by the issuer key instead
	// of the session key (allowed only for recovery, session_sealed and
	// admin_change).
	IssuerSigned []uint64 `json:"issuer_signed"`

	// Chain: every hash recomputed from the stored bytes, prev_hash links,
	// dense sequences from 0.
	Chain Check `json:"chain"`
	// Signatures: every event signed by the key valid at its sequence;
	// rotations signed by the previous key; the key table and the session
	// row's key agree with the chain.
	Signatures Check `json:"signatures"`
	// Goal: the session's goal_hash matches its goal and the genesis event.
	Goal Check `json:"goal"`
	// Log: every covered event is included in the newest checkpoint, whose
	// signature verifies, and no covered leaf has lost its event.
	Log Check `json:"log"`
	// Seal: a sealed session's seal is the last event and commits to the
	// tip and to a checkpoint covering it.
	Seal Check `json:"seal"`
}

// OK reports whether all five checks passed.
func (r *Report) OK() bool {
	return r.Chain.OK && r.Signatures.OK && r.Goal.OK && r.Log.OK && r.Seal.OK
}

// CheckNames are the five checks in report order.
var CheckNames = [5]string{"chain", "signatures", "goal", "log", "seal"}

// Checks returns the five checks in CheckNames order.
func (r *Report) Checks() [5]Check {
	return [5]Check{r.Chain, r.Signatures, r.Goal, r.Log, r.Seal}
}

// FirstFailure returns the failed check with the lowest broken sequence
// (checks without a sequence count as later), and false when all passed.
func (r *Report) FirstFailure() (name string, c Check, ok bool) {
	best := -1
	checks := r.Checks()
	for i, c := range checks {
		if c.OK {
			continue
		}
		if best < 0 || (c.Seq >= 0 && (checks[best].Seq < 0 || c.Seq < checks[best].Seq)) {
			best = i
		}
	}
	if best < 0 {
		return "", Check{}, false
	}
	return CheckNames[best], checks[best], true
}

// VerifyInput is everything needed to verify one chain without a database,
// so offline verifiers (certificates) share this code.
type VerifyInput struct {
	SessionID uuid.UUID
	// Session is the session row; nil when it is missing.
	Session *Session
	// Events are the chain's events as stored, ordered by sequence.
	Events []Event
	// Keys are the chain's key rows, ordered by ValidFromSeq.
	Keys []KeyRecord
	// IssuerKey and Origin identify the trusted instance.
	IssuerKey ed25519.PublicKey
	Origin    string
	// Checkpoint is the newest checkpoint (nil: none).
	Checkpoint *Checkpoint
	// StoredRoot, when set, is the root recomputed from the stored log
	// hashes at Checkpoint.TreeSize.
	StoredRoot *Hash
	// Paths holds the inclusion path of each covered event by log index
	// (offline verifiers). When nil, TreeChecked must be set instead.
	Paths map[int64][]Hash
	// TreeChecked reports that the ledger checked inclusion of every
	// covered event against the stored tree in one pass (see
	// checkSubtrees); NotIncluded is then the log index of the first event
	// whose path does not lead to StoredRoot (-1: none), Why the reason.
	TreeChecked bool
	NotIncluded int64
	Why         string
	// Leaves, when set, holds the stored leaf hash of each covered event
	// by log index, so a rewritten leaf is pinned to its own event rather
	// than to the first neighbour whose proof runs through it.
	Leaves map[int64]Hash
	// MissingLeaf is a log index below the checkpoint size, at or after
	// the chain's first event, that has no event (-1: none).
	MissingLeaf int64
	// SealCheckpoint is the checkpoint the seal event names (nil: absent).
	SealCheckpoint *Checkpoint

	// signed, when set, is the signatures check already run on Events
	// and Keys (VerifySession runs it while it reads the log evidence).
	signed *signedOutcome
}

// signedOutcome is the result of checkSignatures run ahead of time.
type signedOutcome struct {
	check        Check
	issuerSigned []uint64
}

// VerifyEvents runs the five checks on in.
func VerifyEvents(in *VerifyInput) Report {
	r := Report{SessionID: in.SessionID, EventCount: len(in.Events), IssuerSigned: []uint64{}}
	if n := len(in.Events); n > 0 {
		r.TipHash = in.Events[n-1].Hash
	}
	if in.Session != nil {
		r.Sealed = in.Session.Sealed()
	}
	r.Chain = checkChain(in)
	if in.signed != nil {
		r.Signatures, r.IssuerSigned = in.signed.check, in.signed.issuerSigned
	} else {
		r.Signatures = checkSignatures(in, &r)
	}
	r.Goal = checkGoal(in)
	r.Log = checkLog(in, &r)
	r.Seal = checkSeal(in)
	return r
}

func checkChain(in *VerifyInput) Check {
	if len(in.Events) == 0 {
		return fail(0, "the chain has no events")
	}
	prev := GenesisPrevHash(in.SessionID)
	for i := range in.Events {
		ev := &in.Events[i]
		seq := int64(i)
		if ev.SessionID != in.SessionID {
			return fail(seq, "event belongs to session %s", ev.SessionID)
		}
		if ev.Seq != uint64(i) {
			return fail(seq, "expected sequence %d, found %d: an event is missing, duplicated or out of order", i, ev.Seq)
		}
		if i == 0 && ev.Type != TypeGenesis {
			return fail(0, "sequence 0 has type %q, want genesis", ev.Type)
		}
		if ev.PrevHash != prev {
			return fail(seq, "prev_hash %s does not link to the previous event's hash %s", ev.PrevHash, prev)
		}
		if h := EventHash(ev.PrevHash, ev.SessionID, ev.Seq, ev.CreatedMicros, ev.Type, ev.Payload); h != ev.Hash {
			return fail(seq, "stored hash %s differs from the hash %s recomputed from the stored bytes: the event was modified", ev.Hash, h)
		}
		prev = ev.Hash
	}
	return pass("")
}

// chainKeyAt is a key the chain itself declares, valid from a sequence.
type chainKeyAt struct {
	from uint64
	pub  ed25519.PublicKey
}

func checkSignatures(in *VerifyInput, r *Report) Check {
	if len(in.Events) == 0 {
		return fail(0, "the chain has no events")
	}
	// The valid keys come from the signed chain itself (genesis and
	// rotations), never from the key table alone: a table row an attacker
	// adds names no key the chain accepted.
	pub0, c := genesisKey(in)
	if !c.OK {
		return c
	}
	signed, keys, c := chainSigners(in, pub0, r)
	if !c.OK {
		return c
	}
	if c := verifySignatures(signed); !c.OK {
		return c
	}
	if c := checkKeyTable(in.Keys, keys); !c.OK {
		return c
	}
	note := ""
	if len(r.IssuerSigned) > 0 {
		note = fmt.Sprintf("%d event(s) signed by the issuer key", len(r.IssuerSigned))
	}
	return pass(note)
}

// genesisKey returns the session key the genesis event names, checked
// against the session row and, for the instance chain, the issuer key.
func genesisKey(in *VerifyInput) (ed25519.PublicKey, Check) {
	var g struct {
		Key string `json:"session_public_key"`
	}
	if in.Events[0].Type != TypeGenesis || json.Unmarshal(in.Events[0].Payload, &g) != nil {
		return nil, fail(0, "genesis payload does not name a session public key")
	}
	pub0, err := parsePublicKeyHex(g.Key)
	if err != nil {
		return nil, fail(0, "genesis session_public_key: %v", err)
	}
	// Listings and the API show the session row's key and did:key as the
	// session's identity: a row naming another key would have clients
	// trust a key that never signed this chain.
	if s := in.Session; s != nil && (!s.PublicKey.Equal(pub0) || s.DID != DIDKey(pub0)) {
		return nil, fail(0, "the session row names key %x (%s), the genesis event names %x: the session row was changed", []byte(s.PublicKey), s.DID, []byte(pub0))
	}
	if in.SessionID == InstanceSessionID && !pub0.Equal(in.IssuerKey) {
		return nil, fail(0, "the instance chain's genesis key %s is not the trusted issuer key %s", KeyID(pub0), KeyID(in.IssuerKey))
	}
	return pub0, pass("")
}

// signedEvent is an event with the key that must have signed it.
type signedEvent struct {
	pub ed25519.PublicKey
	ev  *Event
}

// chainSigners walks the chain from its genesis key pub0 and assigns each
// event the key that must have signed it: the session key valid at its
// sequence (rotations change it), or the issuer key for the few event
// types the issuer may sign. It returns those pairs and the session keys
// the chain declares, and records the issuer-signed sequences in r.
func chainSigners(in *VerifyInput, pub0 ed25519.PublicKey, r *Report) ([]signedEvent, []chainKeyAt, Check) {
	instance := in.SessionID == InstanceSessionID
	keys := []chainKeyAt{{0, pub0}}
	signed := make([]signedEvent, len(in.Events))
	issuerID := KeyID(in.IssuerKey)
	cur := pub0
	curID := KeyID(pub0)
	for i := range in.Events {
		ev := &in.Events[i]
		seq := int64(i)
		switch ev.Signer {
		case SignerSession:
			if ev.KeyID != curID {
				return nil, nil, fail(seq, "signed by key %s, but key %s is valid at this sequence", ev.KeyID, curID)
			}
			signed[i] = signedEvent{cur, ev}
		case SignerIssuer:
			if instance || !IssuerSignable(ev.Type) {
				return nil, nil, fail(seq, "issuer signature on a %s event: only recovery, session_sealed and admin_change may be issuer-signed", ev.Type)
			}
			if ev.KeyID != issuerID {
				return nil, nil, fail(seq, "issuer-signed event names key %s, the issuer key is %s", ev.KeyID, issuerID)
			}
			signed[i] = signedEvent{in.IssuerKey, ev}
			r.IssuerSigned = append(r.IssuerSigned, ev.Seq)
		default:
			return nil, nil, fail(seq, "unknown signer %q", ev.Signer)
		}
		if ev.Type == TypeKeyRotation {
			np, c := rotatedKey(ev, seq)
			if !c.OK {
				return nil, nil, c
			}
			cur, curID = np, KeyID(np)
			keys = append(keys, chainKeyAt{uint64(i) + 1, np})
		}
	}
	return signed, keys, pass("")
}

// rotatedKey returns the new session key the key rotation event ev, at
// position seq of the chain, declares.
func rotatedKey(ev *Event, seq int64) (ed25519.PublicKey, Check) {
	if ev.Signer != SignerSession {
		return nil, fail(seq, "key rotation must be signed by the previous session key")
	}
	var rp rotationPayload
	if err := json.Unmarshal(ev.Payload, &rp); err != nil {
		return nil, fail(seq, "key rotation payload: %v", err)
	}
	np, err := parsePublicKeyHex(rp.NewPublicKey)
	if err != nil {
		return nil, fail(seq, "key rotation new_public_key: %v", err)
	}
	return np, pass("")
}

// verifySignatures verifies every event's signature with its key, in
// parallel, and reports the first that does not verify.
func verifySignatures(signed []signedEvent) Check {
	// crypto/ed25519 only: a faster hand-written check that accepted one
	// signature the standard library rejects would pass a forged chain.
	bad := parallelFirst(len(signed), func(i int) bool {
		return !verifySig(signed[i].pub, signed[i].ev)
	})
	if bad < 0 {
		return pass("")
	}
	ev := signed[bad].ev
	what := "signature"
	if ev.Type == TypeKeyRotation {
		what = "key rotation signature (must be by the previous key)"
	}
	return fail(int64(bad), "%s does not verify with key %s", what, KeyID(signed[bad].pub))
}

// checkKeyTable checks that the key table lists exactly the keys the chain
// declares, in order.
func checkKeyTable(rows []KeyRecord, keys []chainKeyAt) Check {
	if len(rows) != len(keys) {
		return fail(int64(keyMismatchSeq(rows, keys)), "the key table lists %d keys, the chain declares %d", len(rows), len(keys))
	}
	for i, k := range keys {
		row := rows[i]
		if row.ValidFromSeq != k.from || !row.PublicKey.Equal(k.pub) || row.KeyID != KeyID(k.pub) {
			return fail(int64(k.from), "key table row %d (key %s from sequence %d) disagrees with the chain (key %s from sequence %d)", i, row.KeyID, row.ValidFromSeq, KeyID(k.pub), k.from)
		}
	}
	return pass("")
}

func keyMismatchSeq(rows []KeyRecord, keys []chainKeyAt) uint64 {
	for i := range min(len(rows), len(keys)) {
		if rows[i].ValidFromSeq != keys[i].from || !rows[i].PublicKey.Equal(keys[i].pub) {
			return keys[i].from
		}
	}
	if len(rows) > len(keys) {
		return rows[len(keys)].ValidFromSeq
	}
	return keys[len(rows)].from
}

// parallelChunk is how many items a worker of parallelFirst takes at a
// time: large enough that taking one costs nothing next to verifying it,
// small enough that a worker slowed by other load does not hold the others
// up at the end.
const parallelChunk = 64

// parallelFirst runs bad(i) for i in [0, n) on all CPUs and returns the
// smallest i for which it is true, or -1: the same answer as a loop from
// 0, whatever the scheduling.
func parallelFirst(n int, bad func(int) bool) int {
	workers := min(runtime.GOMAXPROCS(0), (n+parallelChunk-1)/parallelChunk)
	if workers <= 1 {
		for i := range n {
			if bad(i) {
				return i
			}
		}
		return -1
	}
	// Workers take chunks in increasing order and stop at the first bad
	// item of a chunk; first only ever decreases, and a chunk starting
	// after it cannot hold a smaller answer, so it is skipped.
	var next, first atomic.Int64
	first.Store(int64(n))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(parallelChunk)) - parallelChunk
				if lo >= n || int64(lo) >= first.Load() {
					return
				}
				for i := lo; i < min(lo+parallelChunk, n); i++ {
					if bad(i) {
						lowerTo(&first, int64(i))
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	if f := first.Load(); f < int64(n) {
		return int(f)
	}
	return -1
}

// lowerTo sets v to x if x is smaller.
func lowerTo(v *atomic.Int64, x int64) {
	for {
		cur := v.Load()
		if x >= cur || v.CompareAndSwap(cur, x) {
			return
		}
	}
}

func checkGoal(in *VerifyInput) Check {
	if in.SessionID == InstanceSessionID {
		return pass("the instance chain has no goal")
	}
	s := in.Session
	if s == nil {
		return fail(-1, "the session row is missing")
	}
	if GoalHash(s.Goal) != s.GoalHash {
		return fail(0, "session goal_hash %s does not match the stored goal (hash %s)", s.GoalHash, GoalHash(s.Goal))
	}
	if len(in.Events) == 0 {
		return fail(0, "no genesis event to anchor the goal")
	}
	var g struct {
		Goal        *string `json:"goal"`
		GoalHash    *string `json:"goal_hash"`
		PolicyHash  *string `json:"policy_hash"`
		LLMBackend  string  `json:"llm_backend"`
		LLMModel    string  `json:"llm_model"`
		SandboxTier string  `json:"sandbox_tier"`
		AgentLoop   *bool   `json:"agent_loop"`
	}
	if json.Unmarshal(in.Events[0].Payload, &g) != nil || g.Goal == nil || g.GoalHash == nil {
		return fail(0, "genesis payload lacks goal and goal_hash")
	}
	if *g.Goal != s.Goal || *g.GoalHash != s.GoalHash {
		return fail(0, "the session's goal differs from the goal anchored in the genesis event")
	}
	if GoalHash(*g.Goal) != *g.GoalHash {
		return fail(0, "genesis goal_hash does not match the genesis goal")
	}
	gp := ""
	if g.PolicyHash != nil {
		gp = *g.PolicyHash
	}
	if gp != s.PolicyHash {
		return fail(0, "the session's policy_hash %q differs from the genesis policy_hash %q", s.PolicyHash, gp)
	}
	// The row's model and tier are what listings show; a row edited to
	// claim another model or a stronger tier than the signed genesis says
	// is tampering too.
	for _, f := range []struct{ name, row, genesis string }{
		{"llm_backend", s.LLMBackend, g.LLMBackend},
		{"llm_model", s.LLMModel, g.LLMModel},
		{"sandbox_tier", s.SandboxTier, g.SandboxTier},
	} {
		if f.row != f.genesis {
			return fail(0, "the session's %s %q differs from the genesis %s %q", f.name, f.row, f.name, f.genesis)
		}
	}
	// The row's created_at is the genesis event's signed time, and its
	// agent_loop (an exec session shown as an agent session, or the
	// reverse) what the genesis records; genesis events written before
	// agent_loop was signed lack it, and only the trigger of
	// migrations/0002_sessions_guard.sql guards their row.
	if got, want := s.CreatedAt.UnixMicro(), in.Events[0].CreatedMicros; s.CreatedAt.IsZero() || got != want {
		return fail(0, "the session's created_at %s differs from the genesis event's time %s", s.CreatedAt.UTC().Format(TimeFormat), fromMicros(want).UTC().Format(TimeFormat))
	}
	if g.AgentLoop != nil && *g.AgentLoop != s.AgentLoop {
		return fail(0, "the session's agent_loop %v differs from the genesis agent_loop %v", s.AgentLoop, *g.AgentLoop)
	}
	return pass("")
}

func checkLog(in *VerifyInput, r *Report) Check {
	cp := in.Checkpoint
	if cp == nil {
		return fail(-1, "the ledger has no checkpoint")
	}
	r.CheckedTreeSize = cp.TreeSize
	if err := VerifyCheckpoint(cp, in.Origin, in.IssuerKey); err != nil {
		return fail(-1, "checkpoint %d: %v", cp.TreeSize, err)
	}
	if in.StoredRoot != nil && *in.StoredRoot != cp.Root {
		return fail(-1, "the stored log hashes give root %s at size %d, the signed checkpoint says %s: the log was rewritten", *in.StoredRoot, cp.TreeSize, cp.Root)
	}
	if in.Leaves != nil {
		for i := range in.Events {
			ev := &in.Events[i]
			if ev.LogIndex >= cp.TreeSize {
				continue
			}
			if leaf, ok := in.Leaves[ev.LogIndex]; !ok || leaf != LeafHash(ev.Hash) {
				return fail(int64(i), "log leaf %d does not hold this event's hash: the log or the event was rewritten", ev.LogIndex)
			}
		}
	}
	var lastIndex int64 = -1
	for i := range in.Events {
		ev := &in.Events[i]
		if ev.LogIndex <= lastIndex {
			return fail(int64(i), "log index %d is not after the previous event's %d", ev.LogIndex, lastIndex)
		}
		lastIndex = ev.LogIndex
		if ev.LogIndex >= cp.TreeSize {
			r.Uncovered++
			continue
		}
		if in.Paths == nil {
			if !in.TreeChecked || in.StoredRoot == nil {
				return fail(int64(i), "no inclusion evidence for log index %d", ev.LogIndex)
			}
			if in.NotIncluded == ev.LogIndex {
				return fail(int64(i), "event is not included in checkpoint %d at log index %d: %s", cp.TreeSize, ev.LogIndex, in.Why)
			}
			continue
		}
		path, ok := in.Paths[ev.LogIndex]
		if !ok {
			return fail(int64(i), "no inclusion proof for log index %d", ev.LogIndex)
		}
		if err := VerifyInclusion(path, cp.TreeSize, cp.Root, ev.LogIndex, ev.Hash); err != nil {
			return fail(int64(i), "event is not included in checkpoint %d at log index %d: %v", cp.TreeSize, ev.LogIndex, err)
		}
	}
	if in.MissingLeaf >= 0 {
		seq := int64(-1)
		if in.MissingLeaf > lastIndex {
			seq = int64(len(in.Events))
		}
		return fail(seq, "log leaf %d is covered by checkpoint %d but its event is gone: events were deleted", in.MissingLeaf, cp.TreeSize)
	}
	note := ""
	if r.Uncovered > 0 {
		note = fmt.Sprintf("%d event(s) after checkpoint %d are not yet covered", r.Uncovered, cp.TreeSize)
	}
	return pass(note)
}

func checkSeal(in *VerifyInput) Check {
	n := len(in.Events)
	sealAt := -1
	for i := range in.Events {
		if in.Events[i].Type == TypeSessionSealed {
			if sealAt >= 0 {
				return fail(int64(i), "a second session_sealed event (the first is at %d)", sealAt)
			}
			sealAt = i
		}
	}
	rowSealed := in.Session != nil && in.Session.Sealed()
	if sealAt < 0 {
		if rowSealed {
			return fail(int64(n), "the session is marked sealed but has no session_sealed event: the tail of the chain was removed")
		}
		// Unsealed, status and finished_at are bound by no event yet; they
		// must at least agree (the trigger keeps them once set).
		if s := in.Session; s != nil && in.SessionID != InstanceSessionID {
			switch {
			case s.Status == StatusRunning && !s.FinishedAt.IsZero():
				return fail(-1, "the session is running but has finished_at %s", s.FinishedAt.UTC().Format(TimeFormat))
			case s.Status != StatusRunning && s.FinishedAt.IsZero():
				return fail(-1, "the session is %s but has no finished_at", s.Status)
			}
		}
		return pass("not sealed")
	}
	if sealAt != n-1 {
		return fail(int64(sealAt+1), "events follow the seal")
	}
	if !rowSealed {
		return fail(int64(sealAt), "a session_sealed event exists but the session row is not sealed")
	}
	if sealAt == 0 {
		return fail(0, "the seal cannot be sequence 0")
	}
	ev := &in.Events[sealAt]
	var p sealPayload
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return fail(int64(sealAt), "seal payload: %v", err)
	}
	tip := &in.Events[sealAt-1]
	switch {
	case p.TipSequence != tip.Seq || p.EventCount != uint64(sealAt):
		return fail(int64(sealAt), "the seal commits to tip sequence %d and %d events, the chain has tip %d", p.TipSequence, p.EventCount, tip.Seq)
	case p.TipHash != tip.Hash.String():
		return fail(int64(sealAt), "the seal commits to tip hash %s, the tip is %s", p.TipHash, tip.Hash)
	case in.Session != nil && p.Status != in.Session.Status:
		return fail(int64(sealAt), "the seal records status %s, the session row says %s", p.Status, in.Session.Status)
	case in.Session != nil && in.Session.SealedAt.UnixMicro() != ev.CreatedMicros:
		return fail(int64(sealAt), "the session's sealed_at %s differs from the seal event's time %s", in.Session.SealedAt.UTC().Format(TimeFormat), fromMicros(ev.CreatedMicros).UTC().Format(TimeFormat))
	case in.Session != nil && p.FinishedAt != "" && in.Session.FinishedAt.UTC().Format(TimeFormat) != p.FinishedAt:
		return fail(int64(sealAt), "the session's finished_at %s differs from the %s the seal records", fmtTimeOrNone(in.Session.FinishedAt), p.FinishedAt)
	case in.Session != nil && p.FinishedAt == "" && (in.Session.FinishedAt.IsZero() || in.Session.FinishedAt.After(in.Session.SealedAt)):
		// A seal from before finished_at was signed: the row must at
		// least have ended no later than the seal.
		return fail(int64(sealAt), "the session's finished_at %s is not at or before its seal %s", fmtTimeOrNone(in.Session.FinishedAt), in.Session.SealedAt.UTC().Format(TimeFormat))
	case p.CheckpointTreeSize != ev.LogIndex+1:
		return fail(int64(sealAt), "the seal names checkpoint size %d, want %d (the tree ending with the seal)", p.CheckpointTreeSize, ev.LogIndex+1)
	}
	cp := in.SealCheckpoint
	if cp == nil {
		return fail(int64(sealAt), "checkpoint %d named by the seal is missing", p.CheckpointTreeSize)
	}
	if err := VerifyCheckpoint(cp, in.Origin, in.IssuerKey); err != nil {
		return fail(int64(sealAt), "checkpoint %d named by the seal: %v", cp.TreeSize, err)
	}
	return pass("")
}

// VerifySession runs the five checks on one session (or on the instance
// chain) and reports each separately. The error is for failures to read
// the ledger, not for verification failures.
func (l *Ledger) VerifySession(ctx context.Context, id uuid.UUID) (Report, error) {
	return l.verifySession(ctx, id, nil)
}

// verifySession is VerifySession sharing, when dense is not nil, what it
// learns about the whole log with the other chains of one VerifyFull.
func (l *Ledger) verifySession(ctx context.Context, id uuid.UUID, dense *denseLog) (Report, error) {
	in := &VerifyInput{SessionID: id, IssuerKey: l.issuerPub, Origin: l.origin, MissingLeaf: -1}
	err := l.b.View(ctx, func(tx ReadTx) error {
		s, err := tx.Session(ctx, id)
		if err != nil {
			return err
		}
		in.Session = &s
		if in.Events, err = tx.Events(ctx, id, 0, 0); err != nil {
			return err
		}
		if in.Keys, err = tx.Keys(ctx, id); err != nil {
			return err
		}
		// Signatures need only the events and keys: check them on the
		// other cores while this goroutine reads the log evidence.
		done := make(chan *signedOutcome, 1)
		go func() {
			r := Report{IssuerSigned: []uint64{}}
			c := checkSignatures(in, &r)
			done <- &signedOutcome{c, r.IssuerSigned}
		}()
		err = l.collectLogEvidence(ctx, tx, in, dense)
		in.signed = <-done
		return err
	})
	if err != nil {
		return Report{}, fmt.Errorf("ledger: verify session %s: %w", id, err)
	}
	return VerifyEvents(in), nil
}

// collectLogEvidence reads the checkpoint, the stored root and the
// inclusion paths the log and seal checks need.
func (l *Ledger) collectLogEvidence(ctx context.Context, tx ReadTx, in *VerifyInput, dense *denseLog) error {
	cp, err := tx.LatestCheckpoint(ctx)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	in.Checkpoint = &cp
	r := &txHashReader{ctx: ctx, tx: tx, memo: map[int64]Hash{}}
	var covered []*Event
	for i := range in.Events {
		if in.Events[i].LogIndex < cp.TreeSize {
			covered = append(covered, &in.Events[i])
		}
	}
	if len(covered) > 0 {
		lo, hi := covered[0].LogIndex, covered[len(covered)-1].LogIndex+1
		// One range read when the session's leaves are dense enough in
		// the log; otherwise each proof reads its own few hashes.
		if hi-lo <= 16*int64(len(covered))+1024 {
			if err := r.prefetch(lo, hi); err != nil {
				return err
			}
		}
	}
	root, err := tlog.TreeHash(cp.TreeSize, r)
	if err != nil {
		return fmt.Errorf("tree hash of size %d: %w", cp.TreeSize, err)
	}
	sr := Hash(root)
	in.StoredRoot = &sr
	in.Leaves = make(map[int64]Hash, len(covered))
	leafIdx := make([]int64, len(covered))
	for i, ev := range covered {
		leafIdx[i] = tlog.StoredHashIndex(0, ev.LogIndex)
	}
	if leaves, err := r.ReadHashes(leafIdx); err == nil {
		for i, ev := range covered {
			in.Leaves[ev.LogIndex] = Hash(leaves[i])
		}
	}
	in.TreeChecked = true
	in.NotIncluded, in.Why = checkSubtrees(r, cp.TreeSize, covered)
	if err := findMissingLeaf(ctx, tx, in, cp.TreeSize, dense); err != nil {
		return err
	}
	for i := len(in.Events) - 1; i >= 0; i-- {
		if in.Events[i].Type != TypeSessionSealed {
			continue
		}
		var p sealPayload
		if json.Unmarshal(in.Events[i].Payload, &p) == nil {
			if c, err := tx.CheckpointBySize(ctx, p.CheckpointTreeSize); err == nil {
				in.SealCheckpoint = &c
			} else if !isNotFound(err) {
				return err
			}
		}
		break
	}
	return nil
}

// findMissingLeaf sets in.MissingLeaf to the first log index in
// [the chain's first event, size) that has no event, if any.
func findMissingLeaf(ctx context.Context, tx ReadTx, in *VerifyInput, size int64, dense *denseLog) error {
	if len(in.Events) == 0 || in.Events[0].LogIndex >= size {
		return nil
	}
	if ok, err := dense.complete(ctx, tx, size); err != nil || ok {
		return err
	}
	lo := in.Events[0].LogIndex
	n, err := tx.CountEventsInLog(ctx, lo, size)
	if err != nil {
		return err
	}
	if n != size-lo {
		in.MissingLeaf, err = tx.FirstMissingLogIndex(ctx, lo, size)
	}
	return err
}

// denseLog remembers, for one VerifyFull, the log sizes below which every
// leaf has its event. Counting a chain's leaves up to the checkpoint costs
// time proportional to the log, so doing it for every chain made the full
// verification quadratic; when no leaf below the checkpoint is missing at
// all, none is missing after any chain's first event either, and one
// query answers for every chain. A nil denseLog answers nothing.
type denseLog struct {
	mu   sync.Mutex
	seen map[int64]bool
}

// complete reports whether every leaf below size has an event.
func (d *denseLog) complete(ctx context.Context, tx ReadTx, size int64) (bool, error) {
	if d == nil {
		return false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok, known := d.seen[size]; known {
		return ok, nil
	}
	first, err := tx.FirstMissingLogIndex(ctx, 0, size)
	if err != nil {
		return false, err
	}
	if d.seen == nil {
		d.seen = map[int64]bool{}
	}
	d.seen[size] = first < 0
	return first < 0, nil
}

func fmtTimeOrNone(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(TimeFormat)
}
