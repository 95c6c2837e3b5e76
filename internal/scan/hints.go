package scan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// hint is one distinct hint string. lower is matched on the lowercased copy;
// when exact is set (hints of raw patterns) the original text must also
// carry exact at that position.
type hint struct {
	lower  string
	lowerB []byte
	exact  string
}

const (
	hintBucketBits = 12
	maxHints       = 64 // a scan reports the hints found as a uint64
)

// hintIndex finds which hints occur in a text with one pass: each position's
// first three bytes are hashed into a small bucket table, and only positions
// whose bucket holds a hint are compared. Hints shorter than three bytes are
// searched for directly (they start with rare bytes such as '`' or '$').
type hintIndex struct {
	hints  []hint
	bucket [1 << hintBucketBits]uint8 // 0: empty; else 1 + index into lists
	lists  [][]uint8                  // hint ids per bucket
	// listMask[i] is the set of hints of lists[i]; listBucket[i] is the
	// bucket that points to it.
	listMask   []uint64
	listBucket []uint32
	// head[i] and headMask[i] select the longest prefix (at most four
	// bytes) that all hints of lists[i] share. Most positions whose
	// bucket is not empty start a common word that only shares the
	// trigram ("data sync" for "data:", "display" for "disregard"), and
	// one comparison rejects them before any hint is compared.
	head, headMask []uint32
	headLen        []uint8
	short          []uint8 // ids of hints shorter than three bytes
	all            uint64
}

// add registers a hint and returns its id.
func (x *hintIndex) add(h string, raw bool) (int, error) {
	hl := hint{lower: strings.ToLower(h)}
	if raw {
		hl.exact = h
	}
	hl.lowerB = []byte(hl.lower)
	if h == "" {
		return 0, fmt.Errorf("empty hint")
	}
	for i, e := range x.hints {
		if e.lower == hl.lower && e.exact == hl.exact {
			return i, nil
		}
	}
	if len(x.hints) == maxHints {
		return 0, fmt.Errorf("more than %d distinct hints", maxHints)
	}
	id := len(x.hints)
	x.hints = append(x.hints, hl)
	x.all |= 1 << id
	if len(hl.lower) < 3 {
		x.short = append(x.short, uint8(id))
		return id, nil
	}
	b := trigramBucket(hl.lower[0], hl.lower[1], hl.lower[2])
	if x.bucket[b] == 0 {
		if len(x.lists) == 255 {
			return 0, fmt.Errorf("more than 255 hint buckets")
		}
		x.lists = append(x.lists, nil)
		x.listMask = append(x.listMask, 0)
		x.listBucket = append(x.listBucket, b)
		x.head, x.headMask = append(x.head, 0), append(x.headMask, 0)
		x.headLen = append(x.headLen, uint8(min(len(hl.lower), 4)))
		x.bucket[b] = uint8(len(x.lists))
	}
	li := x.bucket[b] - 1
	// Shrink the list's common prefix to what the new hint shares.
	n := int(x.headLen[li])
	if len(x.lists[li]) > 0 {
		prev := x.hints[x.lists[li][0]].lower
		k := 0
		for k < n && k < len(hl.lower) && hl.lower[k] == prev[k] {
			k++
		}
		n = k
	}
	x.headLen[li] = uint8(n)
	x.head[li], x.headMask[li] = 0, 0
	for k := range n {
		x.head[li] |= uint32(hl.lower[k]) << (8 * k)
		x.headMask[li] |= 0xff << (8 * k)
	}
	x.lists[li] = append(x.lists[li], uint8(id))
	x.listMask[li] |= 1 << id
	return id, nil
}

// trigramBucket hashes three bytes; scan computes the same hash inline.
func trigramBucket(a, b, c byte) uint32 {
	return hashKey(uint32(a) | uint32(b)<<8 | uint32(c)<<16)
}

// scan returns the set of hints that occur in lower (the lowercased copy of
// orig) and stores the offset of each one's first occurrence in first. It
// stops early once every hint has been seen.
func (x *hintIndex) scan(lower []byte, orig string, first *[maxHints]int32) uint64 {
	var found uint64
	for _, id := range x.short {
		if at := x.index(lower, orig, &x.hints[id]); at >= 0 {
			found |= 1 << id
			first[id] = int32(at)
		}
	}
	n := len(lower)
	if n < 3 {
		return found
	}
	// A private copy of the bucket table: a bucket whose hints have all
	// been found is cleared, so common words ("system", "new") cost one
	// comparison, not a verification, at each later occurrence.
	local := x.bucket
	bucket := &local
	i := 0
	// Six positions per 8-byte load, hashed independently so the loop
	// does not serialise on one rolling key; only positions whose bucket
	// is not empty are compared.
	// The bound leaves four bytes after the last position for the
	// prefix check.
	head, headMask := x.head, x.headMask
	for ; i+10 <= n; i += 6 {
		w := binary.LittleEndian.Uint64(lower[i:])
		b0, b1, b2 := bucket[hashKey(uint32(w))], bucket[hashKey(uint32(w>>8))], bucket[hashKey(uint32(w>>16))]
		b3, b4, b5 := bucket[hashKey(uint32(w>>24))], bucket[hashKey(uint32(w>>32))], bucket[hashKey(uint32(w>>40))]
		if b0|b1|b2|b3|b4|b5 == 0 {
			continue
		}
		for j, li := range [6]uint8{b0, b1, b2, b3, b4, b5} {
			if li == 0 || binary.LittleEndian.Uint32(lower[i+j:])&headMask[li-1] != head[li-1] {
				continue
			}
			if x.verify(lower, orig, i+j, li, &found, first, bucket) {
				return found
			}
		}
	}
	for ; i < n-2; i++ {
		li := bucket[trigramBucket(lower[i], lower[i+1], lower[i+2])]
		if li != 0 && x.verify(lower, orig, i, li, &found, first, bucket) {
			return found
		}
	}
	return found
}

// hashKey hashes the low three bytes of k into a bucket index.
func hashKey(k uint32) uint32 {
	return ((k & 0xffffff) * 0x9E3779B1) >> (32 - hintBucketBits)
}

// verify looks for the hints of bucket list li starting at i; it reports
// whether every hint has now been found. When the list is exhausted, its
// buckets in the scan's private table are cleared.
func (x *hintIndex) verify(lower []byte, orig string, i int, li uint8, found *uint64, first *[maxHints]int32, bucket *[1 << hintBucketBits]uint8) bool {
	n := len(lower)
	if x.listMask[li-1]&^*found == 0 {
		bucket[x.listBucket[li-1]] = 0
		return false
	}
	for _, id := range x.lists[li-1] {
		if *found&(1<<id) != 0 {
			continue
		}
		h := &x.hints[id]
		if i+len(h.lower) > n || string(lower[i:i+len(h.lower)]) != h.lower {
			continue
		}
		if h.exact != "" && orig[i:i+len(h.exact)] != h.exact {
			continue
		}
		*found |= 1 << id
		first[id] = int32(i)
		if *found == x.all {
			return true
		}
	}
	return false
}

// index returns the first offset of h in the text, honouring exact case,
// or -1.
func (x *hintIndex) index(lower []byte, orig string, h *hint) int {
	if h.exact == "" {
		return bytes.Index(lower, h.lowerB)
	}
	return strings.Index(orig, h.exact)
}
