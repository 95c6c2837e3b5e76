package evidence

import (
	"fmt"
	"math/bits"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/ironvise/ironvise/internal/ledger"
)

// A certificate proves all its events at once with one multi-leaf RFC 6962
// inclusion proof: the verifier recomputes the tree head of the checkpoint
// from the events' own leaves plus the roots of the complete subtrees that
// hold none of them (the "gaps"), listed left to right. If the result is
// the signed root, every event is in the signed tree at its log index.
// Each event's single-leaf audit path is a subset of these hashes, so the
// proof is never larger than per-event paths and, for a session whose
// events are close together in the log, is about 2·log2(tree size) hashes
// instead of one path per event.
//
// The walk follows RFC 6962's definition of the tree hash, MTH(D[lo:hi]) =
// H(0x01 ‖ MTH(D[lo:lo+k]) ‖ MTH(D[lo+k:hi])) with k the largest power of
// two below hi-lo: a range that holds events is split; a range without
// events is a gap if it is a complete aligned subtree, else split too.

// CertInclusion is the multi-leaf inclusion proof of a certificate's
// events in its checkpoint.
type CertInclusion struct {
	// TreeSize is the size of the tree proven into (the checkpoint's).
	TreeSize int64 `json:"tree_size"`
	// Nodes are the gap subtree roots in left-to-right order.
	Nodes []CertNode `json:"nodes"`
}

// CertNode is the root of the complete subtree of leaves
// [Index·2^Level, (Index+1)·2^Level).
type CertNode struct {
	Level int         `json:"level"`
	Index int64       `json:"index"`
	Hash  ledger.Hash `json:"hash"`
}

// maxLevel bounds subtree levels (tree sizes fit in int64).
const maxLevel = 62

// treeWalk computes the tree hash of size over the leaves at the sorted,
// distinct positions idx with leaf hashes leaf; gap supplies each gap's
// root in walk order.
type treeWalk struct {
	idx  []int64
	leaf []tlog.Hash
	gap  func(level int, index int64) (tlog.Hash, error)
}

func (w *treeWalk) root(size int64) (tlog.Hash, error) {
	if size <= 0 {
		return tlog.Hash{}, fmt.Errorf("tree size %d", size)
	}
	return w.hash(0, size, 0, len(w.idx))
}

// hash returns MTH of leaves [lo, hi); the events in it are idx[a:b].
func (w *treeWalk) hash(lo, hi int64, a, b int) (tlog.Hash, error) {
	n := hi - lo
	if a == b {
		if n&(n-1) == 0 && lo%n == 0 {
			level := bits.TrailingZeros64(uint64(n))
			return w.gap(level, lo>>level)
		}
	} else if n == 1 {
		return w.leaf[a], nil
	}
	k := int64(1) << (63 - bits.LeadingZeros64(uint64(n-1)))
	m := a
	for m < b && w.idx[m] < lo+k {
		m++
	}
	l, err := w.hash(lo, lo+k, a, m)
	if err != nil {
		return tlog.Hash{}, err
	}
	r, err := w.hash(lo+k, hi, m, b)
	if err != nil {
		return tlog.Hash{}, err
	}
	return tlog.NodeHash(l, r), nil
}

// gapPositions lists the gaps of the events at idx in a tree of size, in
// walk order (what a proof must supply).
func gapPositions(size int64, idx []int64) ([][2]int64, error) {
	var out [][2]int64
	w := &treeWalk{idx: idx, leaf: make([]tlog.Hash, len(idx)), gap: func(level int, index int64) (tlog.Hash, error) {
		out = append(out, [2]int64{int64(level), index})
		return tlog.Hash{}, nil
	}}
	_, err := w.root(size)
	return out, err
}

// proveMulti builds the multi-leaf proof of evs (ordered by log index) in
// the tree of size, reading the gap roots through r in one batch.
func proveMulti(size int64, evs []ledger.Event, r tlog.HashReader) (CertInclusion, error) {
	idx := make([]int64, len(evs))
	for i := range evs {
		idx[i] = evs[i].LogIndex
	}
	gaps, err := gapPositions(size, idx)
	if err != nil {
		return CertInclusion{}, err
	}
	stored := make([]int64, len(gaps))
	for i, g := range gaps {
		stored[i] = tlog.StoredHashIndex(int(g[0]), g[1])
	}
	hs, err := r.ReadHashes(stored)
	if err != nil {
		return CertInclusion{}, err
	}
	p := CertInclusion{TreeSize: size, Nodes: make([]CertNode, len(gaps))}
	for i, g := range gaps {
		p.Nodes[i] = CertNode{Level: int(g[0]), Index: g[1], Hash: ledger.Hash(hs[i])}
	}
	return p, nil
}

// multiRoot recomputes the tree hash from events and a proof. It fails if
// the events are not in strictly increasing log order inside the tree, or
// if the proof's nodes are not exactly the gaps, in order.
func multiRoot(p *CertInclusion, evs []ledger.Event) (ledger.Hash, error) {
	idx := make([]int64, len(evs))
	leaf := make([]tlog.Hash, len(evs))
	for i := range evs {
		idx[i] = evs[i].LogIndex
		if idx[i] < 0 || idx[i] >= p.TreeSize {
			return ledger.Hash{}, fmt.Errorf("event %d (log index %d) is outside the tree of size %d", evs[i].Seq, idx[i], p.TreeSize)
		}
		if i > 0 && idx[i] <= idx[i-1] {
			return ledger.Hash{}, fmt.Errorf("event %d (log index %d) is not after the previous event's log index %d", evs[i].Seq, idx[i], idx[i-1])
		}
		leaf[i] = tlog.RecordHash(evs[i].Hash[:])
	}
	next := 0
	w := &treeWalk{idx: idx, leaf: leaf, gap: func(level int, index int64) (tlog.Hash, error) {
		if next >= len(p.Nodes) {
			return tlog.Hash{}, fmt.Errorf("the proof lacks the subtree hash at level %d index %d", level, index)
		}
		n := p.Nodes[next]
		next++
		if n.Level != level || n.Index != index || level > maxLevel {
			return tlog.Hash{}, fmt.Errorf("proof node %d is at level %d index %d, the tree needs level %d index %d", next-1, n.Level, n.Index, level, index)
		}
		return tlog.Hash(n.Hash), nil
	}}
	root, err := w.root(p.TreeSize)
	if err != nil {
		return ledger.Hash{}, err
	}
	if next != len(p.Nodes) {
		return ledger.Hash{}, fmt.Errorf("the proof has %d node(s) the tree does not use", len(p.Nodes)-next)
	}
	return ledger.Hash(root), nil
}
