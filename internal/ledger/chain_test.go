package ledger

import (
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"
)

// memChain builds a valid signed chain in memory (no database) for the
// pure verification tests, fuzzing and benchmarks.
type memChain struct {
	in  VerifyInput
	key *SigningKey
}

func newMemChain(tb testing.TB, n int) *memChain {
	tb.Helper()
	issuer, _ := SigningKeyFromSeed(make([]byte, 32))
	key, _ := SigningKeyFromSeed([]byte("0123456789abcdef0123456789abcdef"))
	id := uuid.MustParse("0190f1c2-7a3b-7cde-8f01-23456789abcd")
	goal := "verify me"
	s := &Session{ID: id, Goal: goal, GoalHash: GoalHash(goal), Status: StatusRunning, PublicKey: key.Public(), DID: DIDKey(key.Public()),
		CreatedAt: fromMicros(1796000000000000)} // the genesis event's time below
	m := &memChain{key: key, in: VerifyInput{
		SessionID: id, Session: s, IssuerKey: issuer.Public(), Origin: OriginPrefix + KeyID(issuer.Public()), MissingLeaf: -1,
		Keys: []KeyRecord{{SessionID: id, KeyID: KeyID(key.Public()), PublicKey: key.Public()}},
	}}
	prev := GenesisPrevHash(id)
	for i := range n {
		typ := TypeObservation
		payload := []byte(fmt.Sprintf(`{"content":"event %d with some output text","step":%d,"type":"observation"}`, i, i))
		if i == 0 {
			typ = TypeGenesis
			payload = []byte(fmt.Sprintf(`{"goal":%q,"goal_hash":%q,"policy_hash":null,"session_public_key":%q,"type":"genesis"}`, goal, s.GoalHash, hex.EncodeToString(key.Public())))
		}
		ev := Event{LogIndex: int64(i), SessionID: id, Seq: uint64(i), Type: typ, Payload: payload, CreatedMicros: 1796000000000000 + int64(i),
			PrevHash: prev, KeyID: KeyID(key.Public()), Signer: SignerSession}
		ev.Hash = EventHash(prev, id, ev.Seq, ev.CreatedMicros, typ, payload)
		ev.Signature = key.Sign(ev.Hash)
		prev = ev.Hash
		m.in.Events = append(m.in.Events, ev)
	}
	// A checkpoint over exactly these leaves.
	mem := map[int64]Hash{}
	r := &txHashReader{staged: mem}
	for i := range m.in.Events {
		hs, err := storedHashesFor(int64(i), m.in.Events[i].Hash, r)
		if err != nil {
			tb.Fatal(err)
		}
		for idx, h := range hs {
			mem[idx] = h
		}
	}
	root, err := treeHash(int64(n), r)
	if err != nil {
		tb.Fatal(err)
	}
	cp, err := signCheckpoint(m.in.Origin, int64(n), root, issuer)
	if err != nil {
		tb.Fatal(err)
	}
	m.in.Checkpoint = &cp
	m.in.StoredRoot = &root
	m.in.Paths = map[int64][]Hash{}
	m.in.Leaves = map[int64]Hash{}
	for i := range m.in.Events {
		p, err := proveRecord(int64(n), int64(i), r)
		if err != nil {
			tb.Fatal(err)
		}
		m.in.Paths[int64(i)] = p
		m.in.Leaves[int64(i)] = LeafHash(m.in.Events[i].Hash)
	}
	return m
}

func TestVerifyEventsInMemory(t *testing.T) {
	m := newMemChain(t, 50)
	r := VerifyEvents(&m.in)
	if !r.OK() {
		name, c, _ := r.FirstFailure()
		t.Fatalf("%s failed at %d: %s", name, c.Seq, c.Problem)
	}
	if r.EventCount != 50 || r.CheckedTreeSize != 50 || r.Uncovered != 0 {
		t.Fatalf("report %+v", r)
	}
}

// TestVerifyEventsFastPath covers chains long enough for the precomputed
// verifier: a changed signature is still found, at the right sequence.
func TestVerifyEventsFastPath(t *testing.T) {
	m := newMemChain(t, 200)
	for _, at := range []int{0, 57, 199} {
		in := m.in
		in.Events = append([]Event(nil), m.in.Events...)
		sig := append([]byte(nil), in.Events[at].Signature...)
		sig[5] ^= 0x10
		in.Events[at].Signature = sig
		r := VerifyEvents(&in)
		if r.Signatures.OK || r.Signatures.Seq != int64(at) {
			t.Fatalf("signature changed at %d: signatures check = %+v", at, r.Signatures)
		}
	}
}

// BenchmarkVerifyEvents measures the five checks on a 20,000-event chain
// held in memory (hashes, signatures, inclusion proofs, seal), without
// database reads. docs/design/ledger.md#performance-targets target: ≥ 30,000
// events/s on 2 cores.
func BenchmarkVerifyEvents(b *testing.B) {
	m := newMemChain(b, 20000)
	b.ReportAllocs()
	for b.Loop() {
		if r := VerifyEvents(&m.in); !r.OK() {
			b.Fatal("chain failed")
		}
	}
	b.ReportMetric(20000*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func TestCheckSubtrees(t *testing.T) {
	for _, size := range []int64{1, 2, 3, 7, 8, 13, 64, 100} {
		mem := map[int64]Hash{}
		r := &txHashReader{staged: mem}
		evs := make([]*Event, size)
		for i := range size {
			evs[i] = &Event{LogIndex: i, Hash: Hash{byte(i), byte(i >> 8), 7}}
			hs, err := storedHashesFor(i, evs[i].Hash, r)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range hs {
				mem[k] = v
			}
		}
		if got, why := checkSubtrees(r, size, evs); got != -1 {
			t.Fatalf("size %d: intact tree fails at %d: %s", size, got, why)
		}
		// Rewrite every stored interior node in turn: the first leaf
		// below it must be reported.
		for idx, h := range mem {
			level, n := tlog.SplitStoredHashIndex(idx)
			if level == 0 {
				continue
			}
			bad := h
			bad[0] ^= 1
			mem[idx] = bad
			got, _ := checkSubtrees(r, size, evs)
			mem[idx] = h
			if want := n << level; got != want {
				t.Fatalf("size %d: node %d/%d rewritten: reported leaf %d; want %d", size, level, n, got, want)
			}
		}
	}
}
