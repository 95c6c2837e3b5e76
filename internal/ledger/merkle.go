package ledger

import (
	"context"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// The instance-wide log is an RFC 6962 Merkle tree (leaf = H(0x00 ‖ data),
// node = H(0x01 ‖ left ‖ right)) whose leaf data is the 32-byte event
// hash. golang.org/x/mod/sumdb/tlog does the tree arithmetic; the ledger
// stores the hashes it asks for (tlog's "stored hashes": every complete
// subtree root, about two per leaf) in the log_hashes table, so proofs and
// tree heads need O(log n) reads and no rebuild.

// LeafHash returns the RFC 6962 leaf hash of an event hash.
func LeafHash(eventHash Hash) Hash { return Hash(tlog.RecordHash(eventHash[:])) }

// Subtree is a complete subtree of a Merkle tree: the 2^Level leaves from
// Start.
type Subtree struct {
	Start int64
	Level int
}

// End returns the first leaf after the subtree.
func (s Subtree) End() int64 { return s.Start + int64(1)<<s.Level }

// RootIndex returns the stored-hash index of the subtree's root.
func (s Subtree) RootIndex() int64 { return tlog.StoredHashIndex(s.Level, s.Start>>s.Level) }

// CompleteSubtrees returns the complete subtrees that make up a tree of size
// leaves, leftmost (largest) first: one for each bit set in size.
func CompleteSubtrees(size int64) []Subtree {
	var out []Subtree
	var start int64
	for level := 62; level >= 0; level-- {
		if size&(int64(1)<<level) != 0 {
			out = append(out, Subtree{start, level})
			start += int64(1) << level
		}
	}
	return out
}

// frontierIndexes returns the stored-hash indexes of the complete subtrees
// that make up a tree of size leaves: exactly what tlog reads to append leaf
// size and to compute the root of size.
func frontierIndexes(size int64) []int64 {
	var out []int64
	for _, st := range CompleteSubtrees(size) {
		out = append(out, st.RootIndex())
	}
	return out
}

// txHashReader adapts a ReadTx to tlog.HashReader, looking first in staged
// (hashes computed in the current batch, not yet written) and a memo.
type txHashReader struct {
	ctx    context.Context
	tx     ReadTx
	staged map[int64]Hash
	memo   map[int64]Hash
}

// ReadHashes implements tlog.HashReader.
func (r *txHashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var missing []int64
	var at []int
	for i, ix := range indexes {
		if h, ok := r.staged[ix]; ok {
			out[i] = tlog.Hash(h)
		} else if h, ok := r.memo[ix]; ok {
			out[i] = tlog.Hash(h)
		} else {
			missing = append(missing, ix)
			at = append(at, i)
		}
	}
	if len(missing) > 0 {
		if r.tx == nil {
			return nil, fmt.Errorf("ledger: log hash %d not in memory", missing[0])
		}
		hs, err := r.tx.ReadHashes(r.ctx, missing)
		if err != nil {
			return nil, fmt.Errorf("ledger: read log hashes: %w", err)
		}
		if len(hs) != len(missing) {
			return nil, bug(fmt.Errorf("read %d log hashes, got %d", len(missing), len(hs)))
		}
		for j, h := range hs {
			out[at[j]] = tlog.Hash(h)
			if r.memo != nil {
				r.memo[missing[j]] = h
			}
		}
	}
	return out, nil
}

// prefetch loads the stored hashes written while leaves lo..hi-1 were
// appended (one range read), so that proving many leaves of one session
// does not cost one query per proof.
func (r *txHashReader) prefetch(lo, hi int64) error {
	if hi <= lo {
		return nil
	}
	rows, err := r.tx.HashRange(r.ctx, tlog.StoredHashIndex(0, lo), tlog.StoredHashCount(hi))
	if err != nil {
		return fmt.Errorf("ledger: read log hashes: %w", err)
	}
	for _, h := range rows {
		r.memo[h.Index] = h.Hash
	}
	return nil
}

func toHashes(in []tlog.Hash) []Hash {
	out := make([]Hash, len(in))
	for i, h := range in {
		out[i] = Hash(h)
	}
	return out
}

func toTlog(in []Hash) []tlog.Hash {
	out := make([]tlog.Hash, len(in))
	for i, h := range in {
		out[i] = tlog.Hash(h)
	}
	return out
}

// VerifyInclusion checks an inclusion proof: that the leaf of eventHash at
// index is in the tree of size with the given root. It needs no database,
// so offline verifiers use it too.
func VerifyInclusion(path []Hash, size int64, root Hash, index int64, eventHash Hash) error {
	if err := tlog.CheckRecord(tlog.RecordProof(toTlog(path)), size, tlog.Hash(root), index, tlog.RecordHash(eventHash[:])); err != nil {
		return fmt.Errorf("ledger: inclusion of leaf %d in tree %d: %w", index, size, err)
	}
	return nil
}

// VerifyConsistency checks that the tree of oldSize with oldRoot is a
// prefix of the tree of newSize with newRoot.
func VerifyConsistency(path []Hash, oldSize int64, oldRoot Hash, newSize int64, newRoot Hash) error {
	if err := tlog.CheckTree(tlog.TreeProof(toTlog(path)), newSize, tlog.Hash(newRoot), oldSize, tlog.Hash(oldRoot)); err != nil {
		return fmt.Errorf("ledger: consistency of tree %d with tree %d: %w", oldSize, newSize, err)
	}
	return nil
}

// storedHashesFor returns the stored hashes leaf n adds, by stored index.
func storedHashesFor(n int64, eventHash Hash, r tlog.HashReader) (map[int64]Hash, error) {
	hs, err := tlog.StoredHashes(n, eventHash[:], r)
	if err != nil {
		return nil, err
	}
	base := tlog.StoredHashIndex(0, n)
	out := make(map[int64]Hash, len(hs))
	for i, h := range hs {
		out[base+int64(i)] = Hash(h)
	}
	return out, nil
}

// treeHash returns the root of the first n leaves.
func treeHash(n int64, r tlog.HashReader) (Hash, error) {
	h, err := tlog.TreeHash(n, r)
	return Hash(h), err
}

// proveRecord returns the inclusion path of leaf i in the tree of size n.
func proveRecord(n, i int64, r tlog.HashReader) ([]Hash, error) {
	p, err := tlog.ProveRecord(n, i, r)
	if err != nil {
		return nil, err
	}
	return toHashes(p), nil
}

// checkSubtrees checks that every leaf of evs (all below size) is
// committed by the stored tree of size leaves: each stored node on the
// union of the leaves' paths must equal the hash of its two stored
// children, up to the complete subtrees ("frontier") whose hashes make up
// the root (the caller compares that root with the signed checkpoint).
// Checking the union once costs about one hash per leaf instead of one
// inclusion proof (log n hashes) per leaf, with the same guarantee. It
// returns the first covered leaf below the lowest node that fails, or -1.
func checkSubtrees(r *txHashReader, size int64, evs []*Event) (int64, string) {
	if len(evs) == 0 {
		return -1, ""
	}
	// The level of the frontier subtree each leaf falls in: leaves below
	// the largest power of two in size are in the first subtree, and so on.
	spans := CompleteSubtrees(size)
	topOf := func(leaf int64) int {
		for _, sp := range spans {
			if leaf < sp.End() {
				return sp.Level
			}
		}
		return -1
	}
	// Nodes to check, level by level; a node fails all leaves below it, so
	// remember the first leaf under each node.
	type node struct {
		n     int64 // index at its level
		first int64 // smallest covered leaf below it
	}
	cur := make([]node, 0, len(evs))
	tops := make([]int, 0, len(evs))
	for _, ev := range evs {
		cur = append(cur, node{ev.LogIndex, ev.LogIndex})
		tops = append(tops, topOf(ev.LogIndex))
	}
	maxTop := 0
	for _, t := range tops {
		if t < 0 {
			return evs[0].LogIndex, "leaf beyond the tree"
		}
		maxTop = max(maxTop, t)
	}
	bad := int64(-1)
	for level := 1; level <= maxTop; level++ {
		var next []node
		for _, nd := range cur {
			parent := nd.n >> 1
			// Stop at the frontier subtree of this leaf.
			if level > topOf(nd.first) {
				continue
			}
			if len(next) > 0 && next[len(next)-1].n == parent {
				continue
			}
			next = append(next, node{parent, nd.first})
		}
		if len(next) == 0 {
			break
		}
		idx := make([]int64, 0, 3*len(next))
		for _, nd := range next {
			idx = append(idx, tlog.StoredHashIndex(level, nd.n), tlog.StoredHashIndex(level-1, 2*nd.n), tlog.StoredHashIndex(level-1, 2*nd.n+1))
		}
		hs, err := r.ReadHashes(idx)
		if err != nil {
			return next[0].first, "stored log hashes are missing: " + err.Error()
		}
		for i, nd := range next {
			if tlog.NodeHash(hs[3*i+1], hs[3*i+2]) != hs[3*i] {
				if bad < 0 || nd.first < bad {
					bad = nd.first
				}
			}
		}
		// The lowest failing level names the rewritten node itself (its
		// parent fails too, but would blame its sibling's leaves).
		if bad >= 0 {
			return bad, "a stored node on its path does not match its children: the log was rewritten"
		}
		cur = next
	}
	return -1, ""
}
