package evidence

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/ironvise/ironvise/internal/ledger"
)

// memTree is a tlog tree held in memory.
type memTree struct{ stored []tlog.Hash }

func (m *memTree) ReadHashes(ix []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(ix))
	for i, x := range ix {
		out[i] = m.stored[x]
	}
	return out, nil
}

func buildTree(t *testing.T, leaves []ledger.Hash) *memTree {
	m := &memTree{}
	for i, h := range leaves {
		add, err := tlog.StoredHashes(int64(i), h[:], m)
		if err != nil {
			t.Fatal(err)
		}
		m.stored = append(m.stored, add...)
	}
	return m
}

// TestMultiProofMatchesTreeHash proves random subsets of random trees and
// checks the recomputed root against tlog's, that the proof is never
// larger than per-leaf audit paths, and that any change is detected.
func TestMultiProofMatchesTreeHash(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		n := 1 + r.IntN(300)
		leaves := make([]ledger.Hash, n)
		for i := range leaves {
			leaves[i] = sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(iter)})
		}
		tree := buildTree(t, leaves)
		size := int64(1 + r.IntN(n))
		want, err := tlog.TreeHash(size, tree)
		if err != nil {
			t.Fatal(err)
		}
		var evs []ledger.Event
		paths := 0
		for i := int64(0); i < size; i++ {
			if r.IntN(4) == 0 {
				evs = append(evs, ledger.Event{Seq: uint64(len(evs)), LogIndex: i, Hash: leaves[i]})
				p, _ := tlog.ProveRecord(size, i, tree)
				paths += len(p)
			}
		}
		proof, err := proveMulti(size, evs, tree)
		if err != nil {
			t.Fatal(err)
		}
		got, err := multiRoot(&proof, evs)
		if err != nil || got != ledger.Hash(want) {
			t.Fatalf("n=%d size=%d events=%d: root %s want %x (err %v)", n, size, len(evs), got, want, err)
		}
		if len(evs) > 0 && len(proof.Nodes) > paths {
			t.Fatalf("multi-proof has %d nodes, per-leaf paths %d", len(proof.Nodes), paths)
		}
		if len(proof.Nodes) > 0 {
			bad := proof
			bad.Nodes = append([]CertNode(nil), proof.Nodes...)
			bad.Nodes[r.IntN(len(bad.Nodes))].Hash[0] ^= 1
			if got, err := multiRoot(&bad, evs); err == nil && got == ledger.Hash(want) {
				t.Fatal("a changed proof node still gives the signed root")
			}
		}
		if len(evs) > 0 {
			moved := append([]ledger.Event(nil), evs...)
			moved[0].Hash[31] ^= 1
			if got, _ := multiRoot(&proof, moved); got == ledger.Hash(want) {
				t.Fatal("a changed event still gives the signed root")
			}
		}
	}
}

// TestCertificatesOfInterleavedSessions proves sessions whose events are
// interleaved in the log with another session's and with checkpoints.
func TestCertificatesOfInterleavedSessions(t *testing.T) {
	l := newTestLedger(t)
	ctx := context.Background()
	a, b := newSession(t, l), newSession(t, l)
	for i := range 40 {
		a.append(ledger.TypeThought, map[string]any{"content": "a"})
		if i%3 == 0 {
			b.append(ledger.TypeThought, map[string]any{"content": "b"})
		}
		if i%7 == 0 {
			if _, err := l.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range []*fixture{a, b} {
		l.EndSession(ctx, f.id, ledger.StatusCompleted)
		if _, err := l.Seal(ctx, f.id, "test"); err != nil {
			t.Fatal(err)
		}
		data, err := BuildCertificate(ctx, l, f.id)
		if err != nil {
			t.Fatal(err)
		}
		res := mustVerify(t, data, testIssuerPub(t))
		if !res.Valid {
			t.Fatalf("interleaved session: %+v", res.Pillars)
		}
	}
}
