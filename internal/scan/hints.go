package scan

import (
	"bytes"
	"fmt"
	"strings"
)

// hint is one distinct hint string. lower is matched on the lowercased copy;
// when exact is set (hints of raw patterns) the original text must also
// carry exact at that position.
type hint struct {
	lower string
	exact string
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
	short  []uint8                    // ids of hints shorter than three bytes
	all    uint64
}

// add registers a hint and returns its id.
func (x *hintIndex) add(h string, raw bool) (int, error) {
	hl := hint{lower: strings.ToLower(h)}
	if raw {
		hl.exact = h
	}
	if h == "" {
		return 0, fmt.Errorf("empty hint")
	}
	for i, e := range x.hints {
		if e == hl {
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
		x.lists = append(x.lists, nil)
		x.bucket[b] = uint8(len(x.lists))
	}
	li := x.bucket[b] - 1
	x.lists[li] = append(x.lists[li], uint8(id))
	return id, nil
}

func trigramBucket(a, b, c byte) uint32 {
	k := uint32(a) | uint32(b)<<8 | uint32(c)<<16
	return (k * 0x9E3779B1) >> (32 - hintBucketBits)
}

// scan returns the set of hints that occur in lower (the lowercased copy of
// orig). It stops early once every hint has been seen.
func (x *hintIndex) scan(lower []byte, orig string) uint64 {
	var found uint64
	for _, id := range x.short {
		h := x.hints[id]
		if x.occurs(lower, orig, h) {
			found |= 1 << id
		}
	}
	n := len(lower)
	if n < 3 {
		return found
	}
	bucket := &x.bucket
	for i := 0; i < n-2; i++ {
		b := trigramBucket(lower[i], lower[i+1], lower[i+2])
		li := bucket[b]
		if li == 0 {
			continue
		}
		for _, id := range x.lists[li-1] {
			if found&(1<<id) != 0 {
				continue
			}
			h := &x.hints[id]
			if i+len(h.lower) > n || string(lower[i:i+len(h.lower)]) != h.lower {
				continue
			}
			if h.exact != "" && orig[i:i+len(h.exact)] != h.exact {
				continue
			}
			found |= 1 << id
			if found == x.all {
				return found
			}
		}
	}
	return found
}

// occurs reports whether h occurs in the text, honouring exact case.
func (x *hintIndex) occurs(lower []byte, orig string, h hint) bool {
	if h.exact == "" {
		return bytes.Contains(lower, []byte(h.lower))
	}
	return strings.Contains(orig, h.exact)
}
