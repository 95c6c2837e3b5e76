package ledger

import (
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/google/uuid"
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
	s := &Session{ID: id, Goal: goal, GoalHash: GoalHash(goal), Status: StatusRunning, PublicKey: key.Public()}
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
